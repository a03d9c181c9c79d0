import type { HealthSql, QuotedTables } from '../dialect';
import { num } from '../dialect';

/** SQLite monitoring reads (times are UTC text; julianday() gives their difference in days). */
export function sqliteHealthSql(t: QuotedTables): HealthSql {
  const T = t.outbox;
  return {
    async outboxHealth(exec) {
      const { rows } = await exec(
        `SELECT (SELECT COUNT(*) FROM ${T} WHERE status = 'pending') AS pending,
                (SELECT CAST((julianday('now') - julianday(created_at)) * 86400000 AS INTEGER)
                   FROM ${T} WHERE status = 'pending' ORDER BY seq LIMIT 1) AS oldest_ms,
                (SELECT COUNT(*) FROM ${T} WHERE status = 'dead') AS dead`,
      );
      const r = rows[0] ?? {};
      return {
        pending: num(r.pending),
        oldestPendingAgeMs: Math.max(0, num(r.oldest_ms)),
        dead: num(r.dead),
      };
    },
  };
}
