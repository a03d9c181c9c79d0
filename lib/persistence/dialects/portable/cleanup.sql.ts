import type { SqlExecutor } from '../../sql-executor';
import type { CleanupBatch, CleanupSql } from '../contracts/cleanup.contract';
import type { QuotedTables } from '../dialect';

/** One bounded delete of rows matching `where`, oldest `time` first where the database orders it. */
export interface BoundedDelete {
  table: string;
  /** The time column the retention is measured on. */
  time: string;
  where: string;
  limit: number;
  /** Parameters of `where` (after the limit on databases that bind it). */
  params: unknown[];
  /** The `last` of the previous statement of the sweep, when the dialect returns one. */
  from?: unknown;
}

/** What a database brings to the portable retention cleanup. */
export interface PortableCleanupOptions extends Pick<
  CleanupSql,
  'isolation' | 'prelude' | 'isRetryable'
> {
  /** The database clock. */
  now: string;
  /** Now minus the retention parameter (the placeholder is the dialect's). */
  cutoff: string;
  /** Runs one bounded delete. */
  deleteSome(exec: SqlExecutor, d: BoundedDelete): Promise<CleanupBatch>;
}

/**
 * Retention cleanup for PostgreSQL, MySQL/MariaDB and SQLite: the same three predicates, each
 * database deleting a bounded batch its own way (`deleteSome`).
 */
export function portableCleanupSql(t: QuotedTables, o: PortableCleanupOptions): CleanupSql {
  const { now, cutoff } = o;
  const sql: CleanupSql = {
    expiredIdempotency(exec, limit, from) {
      return o.deleteSome(exec, {
        table: t.idempotency,
        time: 'expires_at',
        where: `expires_at <= ${now} AND (state <> 'started' OR locked_until IS NULL OR locked_until <= ${now})`,
        limit,
        params: [],
        from,
      });
    },
    sentOutbox(exec, limit, retentionMs, from) {
      return o.deleteSome(exec, {
        table: t.outbox,
        time: 'sent_at',
        where: `status = 'sent' AND sent_at <= ${cutoff}`,
        limit,
        params: [retentionMs],
        from,
      });
    },
    oldInbox(exec, limit, retentionMs, from) {
      return o.deleteSome(exec, {
        table: t.inbox,
        time: 'received_at',
        where: `received_at <= ${cutoff}`,
        limit,
        params: [retentionMs],
        from,
      });
    },
    isRetryable: o.isRetryable,
  };
  if (o.isolation) Object.assign(sql, { isolation: o.isolation });
  if (o.prelude) Object.assign(sql, { prelude: o.prelude });
  return sql;
}
