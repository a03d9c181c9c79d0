import { createHash, hash } from 'node:crypto';
import { canonicalJson } from './canonical-json';

export interface FingerprintInput {
  method: string;
  /** The resource path (route template with its parameters filled in, see resourcePath). */
  route: string;
  /** The raw query string (without `?`), or empty. */
  query: string;
  /** Configured header names (lower case) and their values. */
  headers: Array<[string, string | undefined]>;
  contentType: string | undefined;
  /** The parsed body as the framework gave it. */
  body: unknown;
  /** The raw body bytes when the app enabled `rawBody`. */
  rawBody: Buffer | undefined;
  excludeBodyPaths: ReadonlySet<string>;
  /** When not empty, only these dot paths of a JSON body are fingerprinted. */
  includeBodyPaths?: readonly string[];
}

export const isJsonContentType = (ct: string | undefined): boolean =>
  !!ct && /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(ct.trim());

/** Sorted `name=value` pairs of a raw query string (order of parameters does not matter). */
export function sortedQuery(query: string): string {
  if (!query) return '';
  return query
    .split('&')
    .filter((p) => p.length > 0)
    .sort()
    .join('&');
}

/**
 * SHA-256 over method, resource path, sorted query, configured headers and the body. JSON
 * bodies are canonicalized (RFC 8785) first, so member order and whitespace do not matter;
 * other bodies are hashed as raw bytes. Every part is length-prefixed so parts cannot bleed
 * into each other. Returns the 32-byte digest.
 */
export function requestFingerprint(input: FingerprintInput): Buffer {
  const parts: Array<string | Buffer> = [
    input.method.toUpperCase(),
    input.route,
    sortedQuery(input.query),
  ];
  for (const [name, value] of input.headers) parts.push(name, value ?? '\u0000absent');
  parts.push(bodyBytes(input));
  return sha256(lengthPrefixed(parts));
}

/**
 * Each part as a 4-byte big-endian byte length then its bytes (strings in UTF-8), in one buffer:
 * one hash call instead of two per part (each call crosses into C++; the replay path's profile
 * showed them). The bytes, and so the digests of stored records, are the same as part by part.
 */
function lengthPrefixed(parts: ReadonlyArray<string | Buffer>): Buffer {
  let size = 0;
  for (const p of parts) {
    size += 4 + (typeof p === 'string' ? Buffer.byteLength(p, 'utf8') : p.length);
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const p of parts) {
    const n = typeof p === 'string' ? out.write(p, at + 4, 'utf8') : p.copy(out, at + 4);
    out.writeUInt32BE(n, at);
    at += 4 + n;
  }
  return out;
}

/** One-shot SHA-256 (no Hash object per request). */
const sha256 = (bytes: Buffer): Buffer => hash('sha256', bytes, 'buffer');

/** SHA-256 of what a custom fingerprint function returned. */
export function customFingerprint(value: string | Buffer): Buffer {
  return createHash('sha256')
    .update('custom:')
    .update(typeof value === 'string' ? Buffer.from(value, 'utf8') : value)
    .digest();
}

/** The fingerprint of every request under `fingerprint: false`: no part of a request counts. */
export const NO_FINGERPRINT: Buffer = createHash('sha256').update('none:').digest();

function bodyBytes(input: FingerprintInput): string | Buffer {
  const { body, rawBody, contentType } = input;
  const include = input.includeBodyPaths?.length ? input.includeBodyPaths : undefined;
  const json = (value: unknown) =>
    'json:' + canonicalJson(include ? pickPaths(value, include) : value, input.excludeBodyPaths);
  if (isJsonContentType(contentType)) {
    if (body !== undefined && typeof body === 'object' && !Buffer.isBuffer(body)) {
      return json(body);
    }
    if (rawBody && rawBody.length) {
      const parsed = tryParseJson(rawBody);
      if (parsed.ok) return json(parsed.value);
    }
  }
  if (rawBody) return Buffer.concat([Buffer.from('raw:'), rawBody]);
  if (Buffer.isBuffer(body)) return Buffer.concat([Buffer.from('raw:'), body]);
  if (typeof body === 'string') return 'raw:' + body;
  if (body === undefined || body === null) return 'none:';
  // A parsed non-JSON body (e.g. urlencoded) without raw bytes: canonical form of what was parsed.
  return 'parsed:' + canonicalJson(body, input.excludeBodyPaths);
}

/**
 * The parts of a JSON value at the given dot paths, at the same places (array indexes are path
 * segments too). A path that is absent stays absent, which is not the same as `null`.
 */
export function pickPaths(value: unknown, paths: readonly string[]): unknown {
  const out: Record<string, unknown> = {};
  for (const path of paths) {
    const segments = path.split('.');
    let from: unknown = value;
    let ok = true;
    for (const s of segments) {
      if (from === null || typeof from !== 'object' || !Object.hasOwn(from, s)) {
        ok = false;
        break;
      }
      from = (from as Record<string, unknown>)[s];
    }
    if (!ok || from === undefined) continue;
    let to = out;
    for (let i = 0; i < segments.length - 1; i++) {
      const next = to[segments[i]];
      to = (next !== null && typeof next === 'object' ? next : (to[segments[i]] = {})) as Record<
        string,
        unknown
      >;
    }
    to[segments[segments.length - 1]] = from;
  }
  return out;
}

function tryParseJson(raw: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(raw.toString('utf8')) };
  } catch {
    return { ok: false };
  }
}
