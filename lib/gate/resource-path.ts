/**
 * The resource a request addresses, as one normalized path: the route template the router
 * matched with its path parameters filled in (`/customers/:id` + `{ id: 'A' }` →
 * `/customers/A`). The router has already percent-decoded the parameters (RFC 3986), so `%41`
 * and `A` name the same resource; each value is encoded again in one canonical way
 * (`encodeURIComponent`), so a `/` inside a value cannot imitate another path. The template has
 * no trailing slash (`/customers/A/` and `/customers/A` are one resource) and keeps its own
 * letter case. Routes without parameters keep their template unchanged, which is also the scope
 * format of earlier versions.
 */
export function resourcePath(template: string, params: unknown): string {
  const compiled = compile(template);
  if (compiled.names.length === 0 && !hasParams(params)) return compiled.trimmed;
  const values = (params ?? {}) as Record<string, unknown>;
  let out = '';
  const used = new Set<string>();
  for (const part of compiled.parts) {
    if (typeof part === 'string') out += part;
    else if (part.kind === 'param') {
      used.add(part.name);
      out += encodeValue(values[part.name], false);
    } else if (part.kind === 'wildcard') {
      used.add(part.name);
      out += encodeValue(values[part.name], true);
    } else {
      // An optional group (`{/:format}`): present only when each of its parameters is.
      const present = part.names.every((n) => values[n] !== undefined && values[n] !== '');
      for (const n of part.names) used.add(n);
      if (present) {
        out += part.parts
          .map((p) =>
            typeof p === 'string' ? p : encodeValue(values[p.name], p.kind === 'wildcard'),
          )
          .join('');
      }
    }
  }
  out = trimTrailingSlash(out);
  // Parameters the template does not name (a custom router): appended in a fixed order.
  const extra = Object.keys(values)
    .filter((k) => !used.has(k) && values[k] !== undefined)
    .sort();
  for (const k of extra) out += `;${encodeURIComponent(k)}=${encodeValue(values[k], false)}`;
  return out;
}

/**
 * The request's path when no route template is known: percent-encodings of unreserved
 * characters decoded and the others' hex digits upper-cased (RFC 3986 §6.2.2), no trailing slash.
 */
export function normalizePath(path: string): string {
  const normalized = path.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => {
    const ch = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
  return trimTrailingSlash(normalized);
}

type Token = string | { kind: 'param'; name: string } | { kind: 'wildcard'; name: string };
type Part = Token | { kind: 'optional'; names: string[]; parts: Token[] };

interface Compiled {
  trimmed: string;
  names: string[];
  parts: Part[];
}

const cache = new Map<string, Compiled>();
const CACHE_LIMIT = 10_000;

function compile(template: string): Compiled {
  let c = cache.get(template);
  if (c) return c;
  const trimmed = trimTrailingSlash(template);
  const names: string[] = [];
  const parts: Part[] = [];
  // `{…}` optional groups (Express 5 / path-to-regexp 8), `:name` with an optional `(regex)`
  // (Express 4, Fastify), `*name` or a bare `*` (Express 5 splat, Fastify wildcard).
  const re = /\{([^}]*)\}|:([A-Za-z0-9_$]+)(\([^)]*\))?\??|\*([A-Za-z0-9_$]*)/g;
  let last = 0;
  for (let m = re.exec(trimmed); m; m = re.exec(trimmed)) {
    if (m.index > last) parts.push(trimmed.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1] !== undefined) {
      const inner = tokens(m[1]);
      const innerNames = inner.filter((t) => typeof t !== 'string').map((t) => (t as any).name);
      names.push(...innerNames);
      parts.push({ kind: 'optional', names: innerNames, parts: inner });
    } else if (m[2] !== undefined) {
      names.push(m[2]);
      parts.push({ kind: 'param', name: m[2] });
    } else {
      const name = m[4] || '*';
      names.push(name);
      parts.push({ kind: 'wildcard', name });
    }
  }
  if (last < trimmed.length) parts.push(trimmed.slice(last));
  c = { trimmed, names, parts };
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(template, c);
  return c;
}

function tokens(s: string): Token[] {
  const out: Token[] = [];
  const re = /:([A-Za-z0-9_$]+)|\*([A-Za-z0-9_$]*)/g;
  let last = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    if (m.index > last) out.push(s.slice(last, m.index));
    last = m.index + m[0].length;
    out.push(
      m[1] !== undefined ? { kind: 'param', name: m[1] } : { kind: 'wildcard', name: m[2] || '*' },
    );
  }
  if (last < s.length) out.push(s.slice(last));
  return out;
}

/** A value as one canonical path segment; a wildcard keeps its `/` separators. */
function encodeValue(value: unknown, wildcard: boolean): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) return value.map((v) => encodeURIComponent(String(v))).join('/');
  const s = String(value);
  return wildcard ? s.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(s);
}

function hasParams(params: unknown): boolean {
  if (!params || typeof params !== 'object') return false;
  for (const k in params) if ((params as Record<string, unknown>)[k] !== undefined) return true;
  return false;
}

function trimTrailingSlash(p: string): string {
  let end = p.length;
  while (end > 1 && p.charCodeAt(end - 1) === 47 /* / */) end--;
  return end === p.length ? p : p.slice(0, end);
}
