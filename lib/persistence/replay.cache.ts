import { Inject, Injectable } from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';
import {
  type CachedRecord,
  decodeCachedRecord,
  encodeCachedRecord,
  type ReplayCacheStore,
} from './replay-cache.store';

export type { CachedRecord } from './replay-cache.store';

interface Entry {
  record: CachedRecord;
  /** `performance.now()` after which the entry is gone (never after the record's own expiry). */
  until: number;
  bytes: number;
  /** The cache's insertion count when the entry was last (re)inserted: its age in the LRU order. */
  seq: number;
}

/**
 * Memory per entry beyond its strings (counted two bytes a character) and bytes: the Map slot,
 * the entry and record objects, the buffer's views and backing store, and the decoded answer a
 * replay keeps beside the record. Measured on Node 20 (20,000 entries of a 100-byte answer with
 * three headers): about 950 bytes per entry in all, of which about 500 are this; rounded up.
 */
const ENTRY_OVERHEAD_BYTES = 600;

/**
 * A shared entry's life is cut this much short of its record's: the store starts its time to
 * live when the `SET` arrives, a little after this process computed what was left.
 */
const SHARED_MARGIN_MS = 1000;

/**
 * A full cache frees room down to this share of its budget at once (see `evictFor`): the entries
 * a cache of 16 MiB keeps are 94 % to 100 % of what fits.
 */
const EVICTION_LOW_WATER = 15 / 16;

/** At most one warning about the shared store per this many ms (a Redis outage is not a log flood). */
const STORE_WARNING_INTERVAL_MS = 60_000;

/**
 * The replay cache: completed ledger records, kept in this process so that a retry of a completed
 * request is answered with no statement at all. It sits behind the ledger port (only
 * `IdempotencyLedger` reads and fills it); the gate's modes never see it.
 *
 * Why it is safe: a completed record never changes until it expires (only then can it be taken
 * over or cleaned up) or until it is deleted by an admin eviction. So an entry lives at most until
 * the record's expiry (measured on this process' monotonic clock from a moment before the
 * database set it), at most `maxAgeMs` (which bounds how long an eviction made through another
 * process goes unnoticed here), and is dropped at once by an eviction or a cleanup run in this
 * process. Only committed, completed records enter: read from the database, or written by this
 * process and seen committed. In-flight keys and misses always go to the database.
 *
 * What it holds is what the ledger stores: with `encryptionKey`, response bodies stay encrypted
 * in memory and are decrypted per replay, as from the database. It is bounded by bytes
 * (least recently used entries go first, a sixteenth of the budget at a time, approximately: see
 * `get` and `evictFor`).
 *
 * The optional shared tier (`replayCache.store`, e.g. Redis) is read when memory misses and
 * written once a first execution commits, with a time to live no longer than the record's
 * remaining life nor `maxAgeMs`; an admin eviction deletes its entry. Its answers are not copied
 * into memory (their remaining life is the store's to know). A slow or failing store is a miss:
 * the request goes to the ledger.
 * @internal
 */
@Injectable()
export class ReplayCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** Insertions so far (new entries and entries moved to the most recently used end). */
  private seq = 0;
  private readonly maxBytes: number;
  private readonly maxAgeMs: number;
  private readonly store: ReplayCacheStore | undefined;
  private readonly storeTimeoutMs: number;
  private readonly logger: LibraryLogger;
  private lastStoreWarning = -Infinity;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS)
    options: Pick<ResolvedIdempotencyOptions, 'replayCache'> &
      Partial<Pick<ResolvedIdempotencyOptions, 'logger'>>,
  ) {
    const o = options.replayCache;
    this.maxBytes = o === false ? 0 : o.maxBytes;
    this.maxAgeMs = o === false ? 0 : o.maxAgeMs;
    this.store = o === false || !(o.maxAgeMs > 0) ? undefined : (o.store ?? undefined);
    this.storeTimeoutMs = o === false ? 0 : o.storeTimeoutMs;
    this.logger = new LibraryLogger(options.logger, 'Idempotency');
  }

  get enabled(): boolean {
    return this.maxBytes > 0 && this.maxAgeMs > 0;
  }

  /** Whether a shared tier (`replayCache.store`) is configured. */
  get shared(): boolean {
    return this.store !== undefined;
  }

  /** Bytes held now (an estimate: strings count two bytes a character). */
  get size(): number {
    return this.bytes;
  }

  /**
   * The key's live entry, or undefined. A hit on an entry in the older half of the order (more
   * insertions since its own than half the entries) moves it to the most recently used end; one
   * in the newer half stays where it is. So an entry is dropped for room only when it has not
   * been used since at least half the cache was inserted after it, and a hit does not delete and
   * re-insert a Map entry every time: in a Map of many entries that churn costs more than the rest
   * of the lookup (measured: 1.5 µs against 0.2 µs a hit at 40,000 entries, before the garbage it
   * leaves).
   */
  get(scope: string, key: string): CachedRecord | undefined {
    if (this.entries.size === 0) return undefined;
    const id = cacheKey(scope, key);
    const e = this.entries.get(id);
    if (!e) return undefined;
    if (performance.now() >= e.until) {
      this.entries.delete(id);
      this.bytes -= e.bytes;
      return undefined;
    }
    if (this.seq - e.seq > this.entries.size >>> 1) {
      this.entries.delete(id);
      e.seq = ++this.seq;
      this.entries.set(id, e);
    }
    return e.record;
  }

  /**
   * Keeps a committed, completed record for at most `lifetimeMs` from `since` (a
   * `performance.now()` taken before the database computed the record's expiry).
   */
  set(scope: string, key: string, record: CachedRecord, lifetimeMs: number, since: number): void {
    if (!this.enabled) return;
    const until = since + Math.min(lifetimeMs, this.maxAgeMs);
    if (!(until > performance.now())) return;
    const id = cacheKey(scope, key);
    const bytes =
      ENTRY_OVERHEAD_BYTES +
      2 * id.length +
      record.requestHash.length +
      2 * (record.headers?.length ?? 0) +
      (record.body?.length ?? 0);
    if (bytes > this.maxBytes) return;
    this.delete(scope, key);
    this.entries.set(id, { record: compact(record), until, bytes, seq: ++this.seq });
    this.bytes += bytes;
    if (this.bytes > this.maxBytes) this.evictFor(id);
  }

  /**
   * Frees room, least recently used first (a Map iterates in insertion order, and `get` moves old
   * hits), down to `EVICTION_LOW_WATER` of the budget, never the entry just stored (`kept`).
   * Room is freed in batches because a Map keeps the slots of deleted entries until it grows or
   * shrinks again, and each pass starts at the first slot: dropping one entry per insertion walked
   * every slot deleted since then, on every first execution once the cache was full (measured on
   * Node 20: 4.6 µs per insertion at 16,000 entries, 18 µs at 64,000; in batches, 0.3 and 0.5 µs).
   */
  private evictFor(kept: string): void {
    const target = Math.floor(this.maxBytes * EVICTION_LOW_WATER);
    for (const [oldest, e] of this.entries) {
      if (this.bytes <= target || oldest === kept) break;
      this.entries.delete(oldest);
      this.bytes -= e.bytes;
    }
  }

  /** Drops the key's entry (admin eviction). */
  delete(scope: string, key: string): void {
    const id = cacheKey(scope, key);
    const e = this.entries.get(id);
    if (!e) return;
    this.entries.delete(id);
    this.bytes -= e.bytes;
  }

  /** Drops every entry past its lifetime (after a cleanup run). */
  prune(): void {
    const now = performance.now();
    for (const [id, e] of this.entries) {
      if (now < e.until) continue;
      this.entries.delete(id);
      this.bytes -= e.bytes;
    }
  }

  /** Drops everything. */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  /**
   * The shared tier's record for the key, or undefined: none, not a record of ours, or the store
   * failed or took longer than `storeTimeoutMs` (then the ledger answers).
   */
  async getShared(scope: string, key: string): Promise<CachedRecord | undefined> {
    if (!this.store) return undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      const value = await Promise.race([
        this.store.get(cacheKey(scope, key)),
        new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), this.storeTimeoutMs);
        }),
      ]);
      if (value === 'timeout') {
        this.warn('get', new Error(`no answer in ${this.storeTimeoutMs} ms`));
        return undefined;
      }
      return decodeCachedRecord(value);
    } catch (e) {
      this.warn('get', e);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Writes a committed, completed record to the shared tier (not awaited: the answer does not wait
   * for it), living at most `lifetimeMs` from `since` and `maxAgeMs`, less a margin.
   */
  share(scope: string, key: string, record: CachedRecord, lifetimeMs: number, since: number): void {
    if (!this.store) return;
    const ttlMs =
      since + Math.min(lifetimeMs, this.maxAgeMs) - performance.now() - SHARED_MARGIN_MS;
    if (!(ttlMs >= 1)) return;
    let write: Promise<unknown>;
    try {
      write = this.store.set(cacheKey(scope, key), encodeCachedRecord(record), Math.floor(ttlMs));
    } catch (e) {
      return this.warn('set', e);
    }
    Promise.resolve(write).catch((e) => this.warn('set', e));
  }

  /** Deletes the key from the shared tier (admin eviction); a failure is the caller's error. */
  async deleteShared(scope: string, key: string): Promise<void> {
    if (this.store) await this.store.delete(cacheKey(scope, key));
  }

  private warn(op: string, e: unknown): void {
    const now = performance.now();
    if (now - this.lastStoreWarning < STORE_WARNING_INTERVAL_MS) return;
    this.lastStoreWarning = now;
    this.logger.warn({
      event: 'idempotency.replay_cache.store_failed',
      op,
      error: e instanceof Error ? e.message : String(e),
      effect: 'answered by the ledger; further failures in the next minute are not logged',
    });
  }
}

/**
 * The record with its hash and body copied into one buffer of their own. A Buffer under 4 KiB
 * (a captured body, a digest, a column the driver decoded) is usually a view of one of Node's
 * shared 8 KiB pool blocks: kept for a minute, it would keep the whole block alive, and a cache
 * bounded at 16 MiB of records held 8 times that (measured: 5.5 KB per entry of a 100-byte answer).
 */
function compact(record: CachedRecord): CachedRecord {
  const { requestHash, body } = record;
  const own = Buffer.allocUnsafeSlow(requestHash.length + (body?.length ?? 0));
  requestHash.copy(own, 0);
  body?.copy(own, requestHash.length);
  return {
    requestHash: own.subarray(0, requestHash.length),
    status: record.status,
    headers: record.headers,
    body: body ? own.subarray(requestHash.length) : null,
  };
}

/** Scope and key, unambiguously (a scope may contain any character). */
const cacheKey = (scope: string, key: string): string => `${scope.length}:${scope}${key}`;
