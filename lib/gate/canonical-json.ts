import { bodyTooDeep } from './idempotency.errors';

/** Deepest JSON nesting accepted in a guarded request body. */
export const MAX_JSON_DEPTH = 256;

/**
 * RFC 8785 (JCS) canonical JSON of a parsed value: object members sorted by UTF-16 code units,
 * no whitespace, numbers and strings as ECMAScript serializes them. Nesting deeper than
 * MAX_JSON_DEPTH throws a 400 problem. `exclude` holds dot paths left out (fingerprint settings).
 */
export function canonicalJson(value: unknown, exclude: ReadonlySet<string> = EMPTY): string {
  return write(value, 0, exclude.size ? '' : undefined, exclude);
}

const EMPTY: ReadonlySet<string> = new Set();

function write(
  value: unknown,
  depth: number,
  path: string | undefined,
  exclude: ReadonlySet<string>,
): string {
  if (depth > MAX_JSON_DEPTH) throw bodyTooDeep(MAX_JSON_DEPTH);
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'bigint':
      return value.toString();
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          if (i) out += ',';
          out += write(
            value[i],
            depth + 1,
            path === undefined ? undefined : join(path, String(i)),
            exclude,
          );
        }
        return out + ']';
      }
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
        return write((value as { toJSON(): unknown }).toJSON(), depth, path, exclude);
      }
      const keys = Object.keys(value).sort(compareUtf16);
      let out = '{';
      let first = true;
      for (const k of keys) {
        const v = (value as Record<string, unknown>)[k];
        if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
        const childPath = path === undefined ? undefined : join(path, k);
        if (childPath !== undefined && exclude.has(childPath)) continue;
        if (!first) out += ',';
        first = false;
        out += JSON.stringify(k) + ':' + write(v, depth + 1, childPath, exclude);
      }
      return out + '}';
    }
    default:
      return 'null';
  }
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Orders strings by UTF-16 code units, as JCS requires (the default sort does exactly this). */
function compareUtf16(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
