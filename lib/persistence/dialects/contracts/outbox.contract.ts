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
  /**
   * The newest failed attempts as stored (JSON text of an array, oldest first), or null when none
   * failed: see `OutboxFailureRecord`. A requeue keeps it.
   */
  failures: string | null;
  /** When the last failed attempt was recorded (database clock), or null. A requeue keeps it. */
  failedAt: Date | null;
  /** The publisher the message goes to, fixed when it was added (NULL: the one named `default`). */
  route: string | null;
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
  /** The publisher's name (validated: letters, digits, `.`, `_`, `-`; at most 64). */
  route: string;
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
  /**
   * Claim only rows routed to one of these publishers (NULL counts as `default`). Undefined: any
   * route. Names are validated at boot (letters, digits, `.`, `_`, `-`) and written as literals.
   */
  routes?: readonly string[];
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
  /** The row's failure history with this attempt appended and bounded (JSON text). */
  failures: string;
}

/**
 * Which dead messages an admin action applies to. Every criterion given must hold; the store
 * refuses a filter with none (the admin service asks for an explicit `all`).
 */
export interface OutboxDeadFilter {
  /** Exact message type. */
  type?: string;
  /** Exact partition key. */
  partitionKey?: string;
  /** Last failed attempt at or after this time (database clock). */
  failedAfter?: Date;
  /** Last failed attempt before this time (database clock). */
  failedBefore?: Date;
  /** A substring of the last error, compared case-insensitively (`LOWER` on both sides). */
  errorContains?: string;
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
  /** How many dead messages match `filter` (an empty filter: every dead message). */
  countDead(exec: SqlExecutor, filter: OutboxDeadFilter): Promise<number>;
  /**
   * Sequences of up to `limit` dead messages that match `filter` and come after `afterSeq`, in
   * sequence order: one page of a filtered requeue or purge (keyset: each row is visited once).
   */
  deadSeqs(
    exec: SqlExecutor,
    filter: OutboxDeadFilter,
    afterSeq: string | undefined,
    limit: number,
  ): Promise<string[]>;
  /**
   * Puts the rows of `seqs` that are still dead back to pending (attempts reset, due now); their
   * failure history and last error stay. Returns how many.
   */
  requeueDeadSeqs(exec: SqlExecutor, seqs: readonly string[]): Promise<number>;
  /** Deletes the rows of `seqs` that are still dead; returns how many. */
  purgeDeadSeqs(exec: SqlExecutor, seqs: readonly string[]): Promise<number>;
  /** Number of pending rows per route (NULL reported as `default`). */
  pendingByRoute(exec: SqlExecutor): Promise<Record<string, number>>;
}

/** Columns every dialect selects for an OutboxRow, in this order. */
