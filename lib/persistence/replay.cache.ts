import { Inject, Injectable, Optional } from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';
import {
  type CachedRecord,
  decodeCachedRecord,
  encodeCachedRecord,
  type ReplayCacheStore,
} from './replay-cache.store';
import { ReplayArena } from './replay-cache.arena';
import { LibraryClock, MONOTONIC_CLOCK } from './library-clock';

export type { CachedRecord } from './replay-cache.store';

/**
 * A shared entry's life is cut this much short of its record's: the store starts its time to
 * live when the `SET` arrives, a little after this process computed what was left.
 */
const SHARED_MARGIN_MS = 1000;

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
 * What it holds is what the ledger stores: with a key ring, answers (headers, body) stay encrypted
 * in memory and are decrypted per replay, as from the database. It is bounded by bytes, and keeps
 * its entries as bytes outside the JavaScript heap (`ReplayArena`: the oldest go first, a hit in
 * the older half is kept as new).
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
  private readonly arena: ReplayArena;
  private readonly maxBytes: number;
  private readonly maxAgeMs: number;
  private readonly store: ReplayCacheStore | undefined;
  private readonly storeTimeoutMs: number;
  private readonly logger: LibraryLogger;
  private lastStoreWarning = -Infinity;
  private readonly clock: LibraryClock;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS)
    options: Pick<ResolvedIdempotencyOptions, 'replayCache'> &
      Partial<Pick<ResolvedIdempotencyOptions, 'logger'>>,
    @Optional() @Inject(LibraryClock) clock?: LibraryClock,
  ) {
    this.clock = clock ?? MONOTONIC_CLOCK;
    const o = options.replayCache;
    this.maxBytes = o === false ? 0 : o.maxBytes;
    this.maxAgeMs = o === false ? 0 : o.maxAgeMs;
    this.store = o === false || !(o.maxAgeMs > 0) ? undefined : (o.store ?? undefined);
    this.storeTimeoutMs = o === false ? 0 : o.storeTimeoutMs;
    this.arena = new ReplayArena(this.maxBytes);
    this.logger = new LibraryLogger(options.logger, 'Idempotency');
  }

  get enabled(): boolean {
    return this.maxBytes > 0 && this.maxAgeMs > 0;
  }

  /** Whether a shared tier (`replayCache.store`) is configured. */
  get shared(): boolean {
    return this.store !== undefined;
  }

  /** Bytes held now (the arena as allocated, its index and the records decoded for hits). */
  get size(): number {
    return this.arena.size;
  }

  /** Entries held now (live ones; `npm run bench -- replay-cache` sizes its budgets by it). */
  get count(): number {
    return this.arena.count;
  }

  /** The clock lifetimes are measured on (`since` of {@link set} is one of its readings). */
  now(): number {
    return this.clock.now();
  }

  /** The key's live entry, or undefined. */
  get(scope: string, key: string): CachedRecord | undefined {
    if (!this.enabled) return undefined;
    return this.arena.get(cacheKey(scope, key), this.clock.now());
  }

  /**
   * Keeps a committed, completed record for at most `lifetimeMs` from `since` (a {@link now}
   * reading taken before the database computed the record's expiry).
   */
  set(scope: string, key: string, record: CachedRecord, lifetimeMs: number, since: number): void {
    if (!this.enabled) return;
    const until = since + Math.min(lifetimeMs, this.maxAgeMs);
    if (!(until > this.clock.now())) return;
    this.arena.set(cacheKey(scope, key), record, until);
  }

  /** Drops the key's entry (admin eviction). */
  delete(scope: string, key: string): void {
    if (this.enabled) this.arena.delete(cacheKey(scope, key));
  }

  /** Drops every entry past its lifetime (after a cleanup run). */
  prune(): void {
    this.arena.prune(this.clock.now());
  }

  /** Drops everything. */
  clear(): void {
    this.arena.clear();
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
    const ttlMs = since + Math.min(lifetimeMs, this.maxAgeMs) - this.clock.now() - SHARED_MARGIN_MS;
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
    const now = this.clock.now();
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

/** Scope and key, unambiguously (a scope may contain any character). */
const cacheKey = (scope: string, key: string): string => `${scope.length}:${scope}${key}`;
