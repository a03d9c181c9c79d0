import type { CleanupBatch, CleanupSql, QuotedTables } from '../dialect';
import type { SqlExecutor } from '../../sql-executor';

/**
 * PostgreSQL retention cleanup. PostgreSQL has no `DELETE … LIMIT`: the victims are picked by a
 * bounded sub-select in time order that locks them with `FOR UPDATE SKIP LOCKED` (rows another
 * transaction holds are skipped, never waited for, so instances running cleanup at once share the
 * work) and deleted by their physical row id (`ctid = ANY(ARRAY(…))`, a TID scan).
 *
 * Deleted rows keep their index entries until VACUUM, so a sweep that always started from the
 * oldest time would re-read every entry it had already deleted (the last statements of a
 * 1,000,000-row sweep then take hundreds of ms). Each statement returns the newest time it
 * deleted and the next one starts there (`>=`: rows with the same time are not skipped).
 *
 * Each statement runs in a short transaction with `synchronous_commit = off` (SET LOCAL): its
 * commit does not wait for the WAL flush, so the deleted rows' locks go at once and a slow disk
 * does not stretch the statement. A crash can only undo the last moments of deletions, which the
 * next run repeats: nothing is lost that must not be.
 */
export function postgresCleanupSql(t: QuotedTables): CleanupSql {
  const deleteSome = async (
    exec: SqlExecutor,
    table: string,
    time: string,
    where: string,
    params: unknown[],
    from: unknown,
  ): Promise<CleanupBatch> => {
    const all = from === undefined ? params : [...params, from];
    const cursor = from === undefined ? '' : ` AND ${time} >= $${all.length}`;
    const { rows } = await exec(
      `WITH gone AS (
         DELETE FROM ${table}
          WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${where}${cursor}
                                  ORDER BY ${time} LIMIT $1 FOR UPDATE SKIP LOCKED))
         RETURNING ${time} AS t)
       SELECT COUNT(*)::int AS n, MAX(t) AS last FROM gone`,
      all,
    );
    const n = Number(rows[0]?.n ?? 0);
    return { deleted: n, last: n > 0 ? rows[0].last : undefined };
  };
  const cutoff = (p: string) => `statement_timestamp() - (${p})::bigint * interval '1 millisecond'`;
  return {
    prelude: ['SET LOCAL synchronous_commit = off'],
    expiredIdempotency(exec, limit, from) {
      return deleteSome(
        exec,
        t.idempotency,
        'expires_at',
        `expires_at <= statement_timestamp()
           AND (state <> 'started' OR locked_until IS NULL OR locked_until <= statement_timestamp())`,
        [limit],
        from,
      );
    },
    sentOutbox(exec, limit, retentionMs, from) {
      return deleteSome(
        exec,
        t.outbox,
        'sent_at',
        `status = 'sent' AND sent_at <= ${cutoff('$2')}`,
        [limit, retentionMs],
        from,
      );
    },
    oldInbox(exec, limit, retentionMs, from) {
      return deleteSome(
        exec,
        t.inbox,
        'received_at',
        `received_at <= ${cutoff('$2')}`,
        [limit, retentionMs],
        from,
      );
    },
    isRetryable(error) {
      // deadlock_detected, serialization_failure, lock_not_available
      return ['40P01', '40001', '55P03'].includes(
        String((error as any)?.driverError?.code ?? (error as any)?.code),
      );
    },
  };
}
