import type { SqlExecutor } from '../../sql-executor';

/** State of an outbox message: waiting (or in flight under a lease), published, or given up. */
export type OutboxStatus = 'pending' | 'sent' | 'dead';

/** A row of the outbox as the dialects return it. */
export interface OutboxRow {
  /** The ever-increasing sequence (clustered key), as a string (BIGINT). */
  seq: string;
  /** The message id (unique). */
  id: string;
  type: string;
  /** The payload as stored (JSON text). */
  payload: string;
  /** The headers as stored (JSON text of a string map), or null. */
  headers: string | null;
  partitionKey: string | null;
  status: OutboxStatus;
  /**
   * Publish attempts recorded: each failed one and the one that succeeded (a sent row has at
   * least 1; pending: the failed attempts so far; dead: all of them). An attempt cut short by a
   * crash or a lost lease is not recorded. A requeue sets it back to 0.
   */
  attempts: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
  leaseOwner: string | null;
  lockedUntil: Date | null;
  createdAt: Date;
  sentAt: Date | null;
}

/** One message to insert (already validated and serialized). */
export interface OutboxInsert {
  id: string;
  type: string;
  payload: string;
  headers: string | null;
  partitionKey: string | null;
  /** Not published before this many ms from now (database clock); 0: due at once. */
  delayMs: number;
}

export interface OutboxClaimParams {
  /** The lease owner written on the claimed rows (unique per claimed batch). */
  owner: string;
  /** Most rows to claim. */
  limit: number;
  /** How long the claimed rows belong to `owner`, in ms. */
  leaseMs: number;
  /**
   * Per-partition-key ordering: claim a row only when no older row with the same partition key
   * is still pending (due or not, leased or not). Rows without a partition key are unordered.
   */
  ordered: boolean;
}

export interface OutboxFailureParams {
  seq: string;
  owner: string;
  /** Error text (already truncated). */
  error: string;
  /** The next attempt is due this many ms from now (database clock). */
  retryInMs: number;
  /** Attempts are exhausted: the message becomes `dead` instead of pending. */
  dead: boolean;
}

export interface OutboxListParams {
  status?: OutboxStatus;
  partitionKey?: string;
  /** Only rows with a greater sequence (keyset paging). */
  afterSeq?: string;
  /** Newest (highest sequence) first instead of oldest first. */
  newestFirst?: boolean;
  limit: number;
}

/** Runs `fn` in one database transaction (READ COMMITTED where the database has the choice). */
export type OutboxTransactionRunner = <T>(fn: (exec: SqlExecutor) => Promise<T>) => Promise<T>;

/**
 * Every outbox statement a dialect must provide. Times are compared on the database clock.
 * Statements that change a claimed row check its lease owner, so a relay whose lease lapsed and
 * was taken over cannot overwrite the new owner's outcome.
 */
export interface OutboxSql {
  /**
   * Inserts messages as pending, due now or after their `delayMs`, in the caller's transaction
   * (or autocommit).
   */
  insert(exec: SqlExecutor, rows: readonly OutboxInsert[]): Promise<void>;
  /**
   * Locks key-lock slots (ascending, so two transactions never wait for each other crosswise)
   * in the caller's transaction, until it ends: waits while another transaction holds one.
   * Ordered messages are inserted right after, before COMMIT (see OutboxService), so a key's
   * sequence order is its transactions' commit order. SQLite (one writer): nothing to do.
   */
  lockKeySlots(exec: SqlExecutor, slots: readonly number[]): Promise<void>;
  /** Inserts the key-lock slots missing from their table (one created by `synchronize`). */
  fillKeyLockSlots(exec: SqlExecutor): Promise<void>;
  /**
   * Atomically leases up to `limit` of the oldest pending, due, unleased rows to `owner` and
   * returns them (in sequence order). Safe with many relays on one database: rows another
   * relay is claiming at the same moment are skipped, never claimed twice.
   */
  claim(
    exec: SqlExecutor,
    inTransaction: OutboxTransactionRunner,
    p: OutboxClaimParams,
  ): Promise<OutboxRow[]>;
  /** Marks rows still leased to `owner` as sent, counting that attempt; returns how many were marked. */
  markSent(exec: SqlExecutor, seqs: readonly string[], owner: string): Promise<number>;
  /** Counts a failed attempt of a row still leased to `owner`: back to pending (due later) or dead. */
  markFailed(exec: SqlExecutor, p: OutboxFailureParams): Promise<boolean>;
  /**
   * Gives rows still leased to `owner` back unpublished (due at once), their attempts unchanged;
   * returns how many. With `error` (already truncated), it becomes their `last_error`: why they
   * were not published (the broker was unreachable), for the admin and the console.
   */
  release(
    exec: SqlExecutor,
    seqs: readonly string[],
    owner: string,
    error?: string,
  ): Promise<number>;
  /** Rows by status and/or partition key, in sequence order. */
  list(exec: SqlExecutor, p: OutboxListParams): Promise<OutboxRow[]>;
  /** Rows by message id. */
  findByIds(exec: SqlExecutor, ids: readonly string[]): Promise<OutboxRow[]>;
  /** Puts dead or sent messages back to pending (attempts reset, due now); returns how many. */
  requeue(exec: SqlExecutor, ids: readonly string[]): Promise<number>;
  /** Deletes dead messages; returns how many. */
  purgeDead(exec: SqlExecutor, ids: readonly string[]): Promise<number>;
  /** Number of rows per status. */
  countByStatus(exec: SqlExecutor): Promise<Record<OutboxStatus, number>>;
}

/** Columns every dialect selects for an OutboxRow, in this order. */
