import type { SqlExecutor } from '../../sql-executor';

/** What one bounded cleanup statement did. */
export interface CleanupBatch {
  deleted: number;
  /**
   * Where the dialect deletes in time order: the time of the newest row this statement deleted.
   * The next statement of the sweep starts there instead of re-reading the index entries of the
   * rows just deleted (on PostgreSQL they stay in the index until VACUUM). Opaque: passed back as is.
   */
  last?: unknown;
}

/**
 * Retention cleanup statements. Each deletes at most `limit` rows in one short autocommit
 * statement (or a transaction at `isolation`), skipping rows other transactions hold where the
 * database can (READPAST, SKIP LOCKED). `from` is the `last` of the previous statement of the
 * same sweep, when the dialect returned one.
 */
export interface CleanupSql {
  /** Isolation level for the transaction around each statement; undefined: autocommit. */
  readonly isolation?: 'READ COMMITTED';
  /** Statements run first in the transaction around each statement (e.g. `SET LOCAL …`); a transaction is opened when given. */
  readonly prelude?: readonly string[];
  /** Idempotency records past their expiry, never a started record whose lease is still live. */
  expiredIdempotency(exec: SqlExecutor, limit: number, from?: unknown): Promise<CleanupBatch>;
  /** Outbox messages sent more than `retentionMs` ago (pending and dead ones stay). */
  sentOutbox(
    exec: SqlExecutor,
    limit: number,
    retentionMs: number,
    from?: unknown,
  ): Promise<CleanupBatch>;
  /** Inbox records received more than `retentionMs` ago. */
  oldInbox(
    exec: SqlExecutor,
    limit: number,
    retentionMs: number,
    from?: unknown,
  ): Promise<CleanupBatch>;
  /** Errors after which the same statement may simply run again (deadlock victim, lock timeout, busy). */
  isRetryable(error: unknown): boolean;
}
