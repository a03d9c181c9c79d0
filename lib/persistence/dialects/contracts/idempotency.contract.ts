import type { SqlExecutor } from '../../sql-executor';

/** A row of the idempotency ledger as the dialects return it (times already compared on the database clock). */
export interface IdempotencyRow {
  id: string;
  state: 'started' | 'completed';
  requestHash: Buffer;
  responseStatus: number | null;
  responseHeaders: string | null;
  responseBody: Buffer | null;
  leaseToken: string | null;
  /** The record is past its expiry (counts as absent). */
  expired: boolean;
  /** Milliseconds left on the lease of a started record (0 when none or lapsed). */
  leaseRemainingMs: number;
  /**
   * Milliseconds until the record expires, on the database clock (0 when expired; a dialect may
   * cap it, e.g. at one day). Undefined where a dialect does not read it: such a record is not
   * kept by the replay cache.
   */
  expiresInMs?: number;
}

export interface ReserveParams {
  scope: string;
  key: string;
  requestHash: Buffer;
  leaseToken: string;
  leaseMs: number;
  ttlMs: number;
  lockTimeoutMs: number;
}

/**
 * `inserted`: the key is ours. `exists`: a committed record holds it (`row` when the dialect read
 * it in the same round trip; otherwise the caller reads it). `locked`: an uncommitted reservation
 * holds it (another request with this key is in flight).
 */
export type ReserveOutcome =
  | { outcome: 'inserted'; id: string }
  | { outcome: 'exists'; row?: IdempotencyRow }
  | { outcome: 'locked' };

export interface CompleteParams {
  id: string;
  leaseToken: string;
  status: number;
  headers: string;
  body: Buffer | null;
  ttlMs: number;
  /**
   * The reservation was made in this same transaction (transactional mode), so its expiry, set
   * `ttlMs` after the reservation statement, may stand: it differs from "`ttlMs` after completion"
   * by the handler's duration. PostgreSQL keeps it, which leaves every indexed column unchanged
   * and lets the completion be a HOT update (no index entries written); the other dialects
   * always set the expiry from the completion.
   */
  sameTransaction?: boolean;
}

/** Every idempotency-ledger statement a dialect must provide. */
export interface IdempotencySql {
  /**
   * Present where the transactional mode writes its record once (PostgreSQL); absent where it
   * reserves first and completes at the end (SQL Server, MySQL/MariaDB, SQLite).
   */
  singleWrite?: SingleWriteIdempotencySql;
  /** Atomic reservation: insert guarded by the unique (scope, key) index, with a short lock wait. */
  reserve(exec: SqlExecutor, p: ReserveParams): Promise<ReserveOutcome>;
  find(exec: SqlExecutor, scope: string, key: string): Promise<IdempotencyRow | undefined>;
  /** Takes over an expired record, or a started one whose lease (held by `expectedToken`) has lapsed. */
  takeOver(
    exec: SqlExecutor,
    id: string,
    expectedToken: string | null,
    p: ReserveParams,
  ): Promise<boolean>;
  /** Compare-and-set completion: only the holder of `leaseToken` on a started record succeeds. */
  complete(exec: SqlExecutor, p: CompleteParams): Promise<boolean>;
  /**
   * Leased mode: extends our started reservation's lease to `leaseMs` from now (database clock)
   * while its handler runs. False when the record is no longer ours and started (completed,
   * released, or taken over).
   */
  renew(exec: SqlExecutor, id: string, leaseToken: string, leaseMs: number): Promise<boolean>;
  /** Deletes our started reservation (handler failed): the key is free for the retry. */
  release(exec: SqlExecutor, id: string, leaseToken: string): Promise<void>;
  /** Removes one record by scope and key (admin eviction). */
  evict(exec: SqlExecutor, scope: string, key: string): Promise<number>;
}

/** What `claim` found: whether another transaction holds the key's lock, and the key's record. */
export interface ClaimOutcome {
  /** Another transaction holds the key (an uncommitted request with this key is in flight). */
  locked: boolean;
  /** The key's committed record, when there is one (read in the same statement as the lock). */
  row?: IdempotencyRow;
}

/** A completed record written in one statement at the end of the transaction. */
export interface InsertCompletedParams {
  scope: string;
  key: string;
  requestHash: Buffer;
  status: number;
  headers: string;
  body: Buffer | null;
  ttlMs: number;
  /**
   * Replace this expired record, or this started one whose lease (held by `expectedToken`) has
   * lapsed, instead of inserting (compare-and-set, like `takeOver`).
   */
  replace?: { id: string; expectedToken: string | null };
}

/**
 * Transactional mode in ONE write per first execution, on databases with a lock on a key that
 * lasts until the transaction ends: `claim` takes that lock without waiting and reads the key's
 * record in the same statement (no row is written), and `insertCompleted` writes the completed
 * record once, at the end, in the same transaction as the handler's writes. A committed record
 * that raced the lock (committed after the claim's snapshot, before its lock) makes
 * `insertCompleted` return false: the caller rolls back and answers that record.
 */
export interface SingleWriteIdempotencySql {
  claim(
    exec: SqlExecutor,
    p: { scope: string; key: string; lockTimeoutMs: number },
  ): Promise<ClaimOutcome>;
  insertCompleted(exec: SqlExecutor, p: InsertCompletedParams): Promise<boolean>;
}
