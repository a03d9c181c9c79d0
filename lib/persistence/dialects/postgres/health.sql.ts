import type { HealthSql, QuotedTables } from '../dialect';
import { num } from '../dialect';

/** PostgreSQL monitoring reads (MVCC: they never wait on or block the relay). */
export function postgresHealthSql(t: QuotedTables): HealthSql {
  const T = t.outbox;
  return {
    async outboxHealth(exec) {
      const { rows } = await exec(
        `SELECT (SELECT COUNT(*) FROM ${T} WHERE status = 'pending') AS pending,
                (SELECT CEIL(EXTRACT(EPOCH FROM (statement_timestamp() - created_at)) * 1000)::bigint
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
