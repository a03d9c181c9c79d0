import type { HealthSql, QuotedTables } from '../dialect';
import { num } from '../dialect';

/** MySQL/MariaDB monitoring reads over the (status, seq) index; consistent non-locking reads. */
export function mysqlHealthSql(t: QuotedTables): HealthSql {
  const T = t.outbox;
  return {
    async outboxHealth(exec) {
      const { rows } = await exec(
        `SELECT (SELECT COUNT(*) FROM ${T} WHERE status = 'pending') AS pending,
                (SELECT TIMESTAMPDIFF(MICROSECOND, created_at, UTC_TIMESTAMP(3)) DIV 1000
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
