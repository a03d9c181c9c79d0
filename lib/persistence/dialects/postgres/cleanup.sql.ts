import type { CleanupSql } from '../contracts/cleanup.contract';
import type { QuotedTables } from '../dialect';
import { portableCleanupSql } from '../portable/cleanup.sql';
import { isPostgresRetryable, PG_NOW, pgShiftMs } from './postgres.helpers';

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
  return portableCleanupSql(t, {
    prelude: ['SET LOCAL synchronous_commit = off'],
    now: PG_NOW,
    // $1 is the limit.
    cutoff: pgShiftMs('$2', '-'),
    async deleteSome(exec, d) {
      const all = [d.limit, ...d.params, ...(d.from === undefined ? [] : [d.from])];
      const cursor = d.from === undefined ? '' : ` AND ${d.time} >= $${all.length}`;
      const { rows } = await exec(
        `WITH gone AS (
         DELETE FROM ${d.table}
          WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${d.table} WHERE ${d.where}${cursor}
                                  ORDER BY ${d.time} LIMIT $1 FOR UPDATE SKIP LOCKED))
         RETURNING ${d.time} AS t)
       SELECT COUNT(*)::int AS n, MAX(t) AS last FROM gone`,
        all,
      );
      const n = Number(rows[0]?.n ?? 0);
      return { deleted: n, last: n > 0 ? rows[0].last : undefined };
    },
    // deadlock_detected, serialization_failure, lock_not_available
    isRetryable: isPostgresRetryable,
  });
}
