import type { InboxSql } from '../contracts/inbox.contract';
import type { QuotedTables } from '../dialect';
import { portableInboxReads, returningInboxRemove } from '../portable/inbox.sql';
import { settledClaim } from '../row-mappers';
import { SQLITE_STYLE, sqliteCode, sqliteNow } from './sqlite.helpers';

/**
 * SQLite. One writer: in process, SqliteSerializer runs one transaction at a time, so a second
 * delivery's claim starts only after the first delivery's transaction has committed or rolled
 * back; across processes the database file lock (busy timeout) does the same. The claim is one
 * upsert (ON CONFLICT … DO UPDATE … WHERE status = 'retrying' RETURNING, SQLite ≥ 3.35).
 */
export function sqliteInboxSql(t: QuotedTables): InboxSql {
  const T = t.inbox;
  const now = sqliteNow();
  const settle = `SELECT status, attempts FROM ${T} WHERE consumer = ? AND message_id = ?`;
  return {
    ...portableInboxReads(T, SQLITE_STYLE),
    ...returningInboxRemove(T, SQLITE_STYLE),
    async claim(exec, consumer, messageId) {
      const { rows } = await exec(
        `INSERT INTO ${T} (consumer, message_id, status, attempts, received_at, processed_at)
         VALUES (?, ?, 'processed', 1, ${now}, ${now})
         ON CONFLICT (consumer, message_id) DO UPDATE
            SET status = 'processed', attempts = attempts + 1, processed_at = ${now}
          WHERE status = 'retrying'
         RETURNING attempts`,
        [consumer, messageId],
      );
      if (rows[0]) return { outcome: 'claimed', attempts: Number(rows[0].attempts) };
      return settledClaim((await exec(settle, [consumer, messageId])).rows[0]);
    },
    async recordFailure(exec, consumer, messageId, error, maxAttempts) {
      const { rows } = await exec(
        `INSERT INTO ${T} (consumer, message_id, status, attempts, received_at, processed_at, last_error)
         VALUES (?, ?, CASE WHEN 1 >= ? THEN 'failed' ELSE 'retrying' END, 1, ${now},
                 CASE WHEN 1 >= ? THEN ${now} END, ?)
         ON CONFLICT (consumer, message_id) DO UPDATE
            SET status = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE 'retrying' END,
                processed_at = CASE WHEN attempts + 1 >= ? THEN ${now} END,
                last_error = excluded.last_error, attempts = attempts + 1
          WHERE status = 'retrying'
         RETURNING status, attempts`,
        [consumer, messageId, maxAttempts, maxAttempts, error, maxAttempts, maxAttempts],
      );
      const r = rows[0] ?? (await exec(settle, [consumer, messageId])).rows[0];
      return { status: r?.status ?? 'retrying', attempts: Number(r?.attempts ?? 0) };
    },
    isRetryable(error) {
      // Another process held the database file past the busy timeout.
      const code = sqliteCode(error);
      return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT';
    },
  };
}
