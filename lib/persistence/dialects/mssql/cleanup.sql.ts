import type { SqlExecutor } from '../../sql-executor';
import type { CleanupBatch, CleanupSql } from '../contracts/cleanup.contract';
import type { QuotedTables } from '../dialect';
import { dateAddMs, isMssqlRetryable, rowcount } from './mssql.helpers';

/** `SYSUTCDATETIME()` minus a millisecond parameter. */
const minus = (p: string) => dateAddMs(p, 'SYSUTCDATETIME()', '-');

/**
 * SQL Server (and Babelfish) retention cleanup: `DELETE TOP (n)` with at most 4,000 rows per
 * statement (the options cap it), below the 5,000 locks on one table reference that trigger lock
 * escalation, so a run never takes a table lock. READPAST skips rows other transactions hold
 * (an in-flight request's reservation, a relay's claimed batch) instead of waiting for them.
 *
 * READPAST is documented as not allowed when READ_COMMITTED_SNAPSHOT is ON and the session runs
 * READ COMMITTED; Microsoft's remedy is the READCOMMITTEDLOCK hint, which is a granularity hint
 * like ROWLOCK and cannot be combined with it. The database option is read once and the hints
 * chosen accordingly: `(ROWLOCK, READPAST)` without RCSI, `(READPAST, READCOMMITTEDLOCK)` with it
 * (Azure SQL Database's default).
 */
export function mssqlCleanupSql(t: QuotedTables): CleanupSql {
  let hints: Promise<string> | undefined;
  const tableHints = (exec: SqlExecutor): Promise<string> =>
    (hints ??= exec(
      `SELECT CAST(is_read_committed_snapshot_on AS INT) AS rcsi FROM sys.databases WHERE database_id = DB_ID()`,
    ).then(
      ({ rows }) =>
        Number(rows[0]?.rcsi) === 1 ? 'READPAST, READCOMMITTEDLOCK' : 'ROWLOCK, READPAST',
      (e) => {
        hints = undefined;
        throw e;
      },
    ));
  // No sweep cursor: DELETE TOP takes no ORDER BY, and SQL Server's ghost cleanup removes
  // deleted index entries in the background.
  const deleteTop = async (
    exec: SqlExecutor,
    table: string,
    where: string,
    params: unknown[],
  ): Promise<CleanupBatch> => {
    const { rows } = await exec(
      `DELETE TOP (@0) FROM ${table} WITH (${await tableHints(exec)}) WHERE ${where}; SELECT @@ROWCOUNT AS n;`,
      params,
    );
    return { deleted: rowcount(rows) };
  };
  return {
    expiredIdempotency(exec, limit) {
      return deleteTop(
        exec,
        t.idempotency,
        `expires_at <= SYSUTCDATETIME()
           AND (state <> 'started' OR locked_until IS NULL OR locked_until <= SYSUTCDATETIME())`,
        [limit],
      );
    },
    sentOutbox(exec, limit, retentionMs) {
      return deleteTop(exec, t.outbox, `status = 'sent' AND sent_at <= ${minus('@1')}`, [
        limit,
        retentionMs,
      ]);
    },
    oldInbox(exec, limit, retentionMs) {
      return deleteTop(exec, t.inbox, `received_at <= ${minus('@1')}`, [limit, retentionMs]);
    },
    // 1205: chosen as deadlock victim; 1222: lock request time out period exceeded.
    isRetryable: isMssqlRetryable,
  };
}
