import type { CleanupSql } from '../contracts/cleanup.contract';
import type { QuotedTables } from '../dialect';
import { portableCleanupSql } from '../portable/cleanup.sql';
import { sqliteAgo, sqliteCode, sqliteNow } from './sqlite.helpers';

/**
 * SQLite retention cleanup: a bounded `DELETE … WHERE rowid IN (SELECT rowid … LIMIT n)` (no
 * SQLITE_ENABLE_UPDATE_DELETE_LIMIT needed). Each statement takes the in-process writer lock for
 * a moment, so requests interleave with a long cleanup instead of waiting for all of it.
 */
export function sqliteCleanupSql(t: QuotedTables): CleanupSql {
  return portableCleanupSql(t, {
    now: sqliteNow(),
    cutoff: sqliteAgo(),
    // No sweep cursor: SQLite removes deleted rows from its B-trees at once.
    async deleteSome(exec, d) {
      const n = Math.max(1, Math.floor(d.limit));
      const { affected } = await exec(
        `DELETE FROM ${d.table} WHERE rowid IN (SELECT rowid FROM ${d.table} WHERE ${d.where} LIMIT ${n})`,
        d.params,
      );
      return { deleted: affected };
    },
    isRetryable(error) {
      // Another process holds the database file (SQLITE_BUSY, SQLITE_LOCKED).
      const code = sqliteCode(error);
      return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
    },
  });
}
