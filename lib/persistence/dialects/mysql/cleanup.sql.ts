import type { CleanupBatch, CleanupSql, QuotedTables } from '../dialect';
import type { SqlExecutor } from '../../sql-executor';

/**
 * MySQL 8 / MariaDB retention cleanup: `DELETE … ORDER BY <time> LIMIT n` walks the time index
 * from the oldest row. Each statement runs in its own READ COMMITTED transaction, where InnoDB
 * locks only the rows it deletes (no gap locks that would hold up inserts of new rows).
 * Instances running at once take rows in the same index order, so one waits briefly for the
 * other's short batch instead of deadlocking.
 */
export function mysqlCleanupSql(t: QuotedTables): CleanupSql {
  // No sweep cursor: InnoDB's purge removes delete-marked index records in the background.
  const deleteSome = async (
    exec: SqlExecutor,
    table: string,
    where: string,
    order: string,
    limit: number,
    params: unknown[],
  ): Promise<CleanupBatch> => {
    const n = Math.max(1, Math.floor(limit));
    const { affected } = await exec(
      `DELETE FROM ${table} WHERE ${where} ORDER BY ${order} LIMIT ${n}`,
      params,
    );
    return { deleted: affected };
  };
  const cutoff = `DATE_SUB(UTC_TIMESTAMP(3), INTERVAL (?) * 1000 MICROSECOND)`;
  return {
    isolation: 'READ COMMITTED',
    expiredIdempotency(exec, limit) {
      return deleteSome(
        exec,
        t.idempotency,
        `expires_at <= UTC_TIMESTAMP(3)
           AND (state <> 'started' OR locked_until IS NULL OR locked_until <= UTC_TIMESTAMP(3))`,
        'expires_at',
        limit,
        [],
      );
    },
    sentOutbox(exec, limit, retentionMs) {
      return deleteSome(
        exec,
        t.outbox,
        `status = 'sent' AND sent_at <= ${cutoff}`,
        'sent_at',
        limit,
        [retentionMs],
      );
    },
    oldInbox(exec, limit, retentionMs) {
      return deleteSome(exec, t.inbox, `received_at <= ${cutoff}`, 'received_at', limit, [
        retentionMs,
      ]);
    },
    isRetryable(error) {
      // ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT
      const errno = (error as any)?.driverError?.errno ?? (error as any)?.errno;
      return errno === 1213 || errno === 1205;
    },
  };
}
