import type { HealthSql, QuotedTables } from '../dialect';
import { num } from '../dialect';

/**
 * SQL Server (and Babelfish) monitoring reads. The counts read through the filtered index of
 * pending rows (and the clustered index for dead ones) WITH (NOLOCK): a figure for a gauge or a
 * health check may be a moment off, but it never waits behind (or blocks) a relay's claim.
 * DATEDIFF_BIG: milliseconds overflow DATEDIFF's INT after ~24.8 days.
 */
export function mssqlHealthSql(t: QuotedTables): HealthSql {
  const T = t.outbox;
  return {
    async outboxHealth(exec) {
      const { rows } = await exec(
        `SELECT (SELECT COUNT_BIG(*) FROM ${T} WITH (NOLOCK) WHERE status = 'pending') AS pending,
                (SELECT TOP (1) DATEDIFF_BIG(millisecond, created_at, SYSUTCDATETIME())
                   FROM ${T} WITH (NOLOCK) WHERE status = 'pending' ORDER BY seq) AS oldest_ms,
                (SELECT COUNT_BIG(*) FROM ${T} WITH (NOLOCK) WHERE status = 'dead') AS dead`,
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
