/**
 * The shared tier of the replay cache: a key-value store that several instances of an app reach
 * (Redis, through `RedisReplayCacheStore`, or anything that implements these three calls). It
 * only ever holds committed, completed answers, each with a time to live no longer than its
 * record's; the ledger stays the source of truth, and every failure of the store is a miss.
 *
 * Keys are strings the library builds (a prefix, then the scope and the idempotency key); values
 * are opaque strings (an encoded answer, bodies as stored: sealed when a key ring is set).
 */
export interface ReplayCacheStore {
  /** The value stored under `key`, or null/undefined when there is none. */
  get(key: string): Promise<string | null | undefined>;
  /** Stores `value` under `key` for `ttlMs` milliseconds (then it must be gone). */
  set(key: string, value: string, ttlMs: number): Promise<unknown>;
  /** Removes `key` (an admin eviction); resolves once it is gone. */
  delete(key: string): Promise<unknown>;
}

/** A completed record as the cache keeps it: its fingerprint and its answer, encoded as stored. */
export interface CachedRecord {
  requestHash: Buffer;
  status: number;
  headers: string | null;
  body: Buffer | null;
}

/** Version tag of the encoding, so that a later layout never reads an older one as its own. */
const FORMAT = 'eo1';

/** One string per record: `eo1`, then the status, hash, headers and body, tab-separated. */
export function encodeCachedRecord(r: CachedRecord): string {
  return [
    FORMAT,
    String(r.status),
    r.requestHash.toString('base64'),
    r.headers === null ? '-' : `+${Buffer.from(r.headers, 'utf8').toString('base64')}`,
    r.body === null ? '-' : `+${r.body.toString('base64')}`,
  ].join('\t');
}

/** The record a stored string holds, or undefined when it is not one of ours (then: a miss). */
export function decodeCachedRecord(value: unknown): CachedRecord | undefined {
  if (typeof value !== 'string') return undefined;
  const parts = value.split('\t');
  if (parts.length !== 5 || parts[0] !== FORMAT) return undefined;
  const status = Number(parts[1]);
  if (!Number.isInteger(status) || status < 100 || status > 599) return undefined;
  const requestHash = Buffer.from(parts[2], 'base64');
  if (requestHash.length !== 32) return undefined;
  const optional = (p: string): Buffer | null | undefined =>
    p === '-' ? null : p.startsWith('+') ? Buffer.from(p.slice(1), 'base64') : undefined;
  const headers = optional(parts[3]);
  const body = optional(parts[4]);
  if (headers === undefined || body === undefined) return undefined;
  return { requestHash, status, headers: headers?.toString('utf8') ?? null, body };
}
