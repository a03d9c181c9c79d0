import { Inject, Injectable } from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';

/** A completed record as the cache keeps it: its fingerprint and its answer, encoded as stored. */
export interface CachedRecord {
  requestHash: Buffer;
  status: number;
  headers: string | null;
  body: Buffer | null;
}

interface Entry {
  record: CachedRecord;
  /** `performance.now()` after which the entry is gone (never after the record's own expiry). */
  until: number;
  bytes: number;
}

/** Bookkeeping per entry beyond its strings and buffers (the Map slot, the objects). */
const ENTRY_OVERHEAD_BYTES = 200;

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
 * (least recently used entries go first) and never leaves the process.
 * @internal
 */
@Injectable()
export class ReplayCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly maxBytes: number;
  private readonly maxAgeMs: number;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) options: Pick<ResolvedIdempotencyOptions, 'replayCache'>,
  ) {
    const o = options.replayCache;
    this.maxBytes = o === false ? 0 : o.maxBytes;
    this.maxAgeMs = o === false ? 0 : o.maxAgeMs;
  }

  get enabled(): boolean {
    return this.maxBytes > 0 && this.maxAgeMs > 0;
  }

  /** Bytes held now (an estimate: strings count two bytes a character). */
  get size(): number {
    return this.bytes;
  }

  /** The key's live entry (marked most recently used), or undefined. */
  get(scope: string, key: string): CachedRecord | undefined {
    if (this.entries.size === 0) return undefined;
    const id = cacheKey(scope, key);
    const e = this.entries.get(id);
    if (!e) return undefined;
    this.entries.delete(id);
    if (performance.now() >= e.until) {
      this.bytes -= e.bytes;
      return undefined;
    }
    this.entries.set(id, e);
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
    this.entries.set(id, { record, until, bytes });
    this.bytes += bytes;
    // Least recently used first: a Map iterates in insertion order, and `get` re-inserts.
    for (const [oldest, e] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
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
}

/** Scope and key, unambiguously (a scope may contain any character). */
const cacheKey = (scope: string, key: string): string => `${scope.length}:${scope}${key}`;
