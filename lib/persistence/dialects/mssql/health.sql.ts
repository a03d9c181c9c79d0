import type { HealthSql } from '../contracts/health.contract';
import type { QuotedTables } from '../dialect';
import { outboxHealthRow } from '../portable/health.sql';

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
      return outboxHealthRow(rows[0]);
    },
  };
}
