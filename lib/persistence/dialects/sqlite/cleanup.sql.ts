import type { CleanupBatch, CleanupSql, QuotedTables } from '../dialect';
import type { SqlExecutor } from '../../sql-executor';
import { sqliteNow } from './idempotency.sql';

/**
 * SQLite retention cleanup: a bounded `DELETE … WHERE rowid IN (SELECT rowid … LIMIT n)` (no
 * SQLITE_ENABLE_UPDATE_DELETE_LIMIT needed). Each statement takes the in-process writer lock for
 * a moment, so requests interleave with a long cleanup instead of waiting for all of it.
 */
export function sqliteCleanupSql(t: QuotedTables): CleanupSql {
  // No sweep cursor: SQLite removes deleted rows from its B-trees at once.
  const deleteSome = async (
    exec: SqlExecutor,
    table: string,
    where: string,
    limit: number,
    params: unknown[],
  ): Promise<CleanupBatch> => {
    const n = Math.max(1, Math.floor(limit));
    const { affected } = await exec(
      `DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${where} LIMIT ${n})`,
      params,
    );
    return { deleted: affected };
  };
  const now = sqliteNow();
  const cutoff = `strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ((?) / 1000.0) || ' seconds')`;
  return {
    expiredIdempotency(exec, limit) {
      return deleteSome(
        exec,
        t.idempotency,
        `expires_at <= ${now} AND (state <> 'started' OR locked_until IS NULL OR locked_until <= ${now})`,
        limit,
        [],
      );
    },
    sentOutbox(exec, limit, retentionMs) {
      return deleteSome(exec, t.outbox, `status = 'sent' AND sent_at <= ${cutoff}`, limit, [
        retentionMs,
      ]);
    },
    oldInbox(exec, limit, retentionMs) {
      return deleteSome(exec, t.inbox, `received_at <= ${cutoff}`, limit, [retentionMs]);
    },
    isRetryable(error) {
      // Another process holds the database file (SQLITE_BUSY, SQLITE_LOCKED).
      const code = String((error as any)?.driverError?.code ?? (error as any)?.code ?? '');
      return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
    },
  };
}
