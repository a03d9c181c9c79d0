import type { HealthSql } from '../contracts/health.contract';
import { num } from '../row-mappers';

/** Maps the one row of an outbox health read. */
export function outboxHealthRow(r: any = {}) {
  return {
    pending: num(r.pending),
    oldestPendingAgeMs: Math.max(0, num(r.oldest_ms)),
    dead: num(r.dead),
  };
}

/**
 * PostgreSQL, MySQL/MariaDB and SQLite monitoring reads (MVCC or consistent non-locking reads:
 * they never wait on or block the relay), over the indexes of pending and dead rows.
 * `ageMs(column)` is the database's expression for the milliseconds since a time column.
 */
export function portableHealthSql(outbox: string, ageMs: (column: string) => string): HealthSql {
  const T = outbox;
  const sql = `SELECT (SELECT COUNT(*) FROM ${T} WHERE status = 'pending') AS pending,
                (SELECT ${ageMs('created_at')}
                   FROM ${T} WHERE status = 'pending' ORDER BY seq LIMIT 1) AS oldest_ms,
                (SELECT COUNT(*) FROM ${T} WHERE status = 'dead') AS dead`;
  return {
    async outboxHealth(exec) {
      const { rows } = await exec(sql);
      return outboxHealthRow(rows[0]);
    },
  };
}
