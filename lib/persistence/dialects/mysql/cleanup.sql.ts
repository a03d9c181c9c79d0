import type { CleanupSql } from '../contracts/cleanup.contract';
import type { QuotedTables } from '../dialect';
import { portableCleanupSql } from '../portable/cleanup.sql';
import { isMysqlRetryable, MYSQL_NOW, mysqlShiftMs } from './mysql.helpers';

/**
 * MySQL 8 / MariaDB retention cleanup: `DELETE … ORDER BY <time> LIMIT n` walks the time index
 * from the oldest row. Each statement runs in its own READ COMMITTED transaction, where InnoDB
 * locks only the rows it deletes (no gap locks that would hold up inserts of new rows).
 * Instances running at once take rows in the same index order, so one waits briefly for the
 * other's short batch instead of deadlocking.
 */
export function mysqlCleanupSql(t: QuotedTables): CleanupSql {
  return portableCleanupSql(t, {
    isolation: 'READ COMMITTED',
    now: MYSQL_NOW,
    cutoff: mysqlShiftMs('DATE_SUB'),
    // No sweep cursor: InnoDB's purge removes delete-marked index records in the background.
    async deleteSome(exec, d) {
      const n = Math.max(1, Math.floor(d.limit));
      const { affected } = await exec(
        `DELETE FROM ${d.table} WHERE ${d.where} ORDER BY ${d.time} LIMIT ${n}`,
        d.params,
      );
      return { deleted: affected };
    },
    // ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT
    isRetryable: isMysqlRetryable,
  });
}
