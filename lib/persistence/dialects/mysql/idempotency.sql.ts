import type { IdempotencySql } from '../contracts/idempotency.contract';
import type { QuotedTables } from '../dialect';
import { mapIdempotencyRow } from '../row-mappers';
import { ER_DUP_ENTRY, mysqlErrno } from './mysql.helpers';

/** MySQL errno for an exceeded lock wait. */
const ER_LOCK_WAIT_TIMEOUT = 1205;

/**
 * MySQL 8 and MariaDB 10.6+. Times use the database clock in UTC (UTC_TIMESTAMP(3), DATETIME(3)).
 * The reservation bounds its wait on another transaction's uncommitted key with
 * innodb_lock_wait_timeout (MariaDB: `SET STATEMENT … FOR`, scoped to the one statement; MySQL:
 * set around it). A failed statement does not abort an InnoDB transaction.
 */
export function mysqlIdempotencySql(t: QuotedTables, isMariaDb: boolean): IdempotencySql {
  const T = t.idempotency;
  const plus = (p = '?') => `DATE_ADD(UTC_TIMESTAMP(3), INTERVAL (${p}) * 1000 MICROSECOND)`;
  return {
    async reserve(exec, p) {
      const insert = `INSERT INTO ${T} (scope, idempotency_key, request_hash, state, lease_token, locked_until, created_at, expires_at)
        VALUES (?, ?, ?, 'started', ?, ${plus()}, UTC_TIMESTAMP(3), ${plus()})`;
      const params = [p.scope, p.key, p.requestHash, p.leaseToken, p.leaseMs, p.ttlMs];
      // MariaDB accepts 0 (no wait); MySQL's minimum is 1 second.
      const seconds = isMariaDb
        ? Math.floor(p.lockTimeoutMs / 1000)
        : Math.max(1, Math.ceil(p.lockTimeoutMs / 1000));
      try {
        let res;
        if (isMariaDb) {
          res = await exec(
            `SET STATEMENT innodb_lock_wait_timeout = ${seconds} FOR ${insert}`,
            params,
          );
        } else {
          await exec(`SET SESSION innodb_lock_wait_timeout = ${seconds}`);
          try {
            res = await exec(insert, params);
          } finally {
            await exec(`SET SESSION innodb_lock_wait_timeout = DEFAULT`);
          }
        }
        const id = res.rows[0]?.insertId;
        return { outcome: 'inserted', id: String(id) };
      } catch (e) {
        const errno = mysqlErrno(e);
        if (errno === ER_DUP_ENTRY) return { outcome: 'exists' };
        if (errno === ER_LOCK_WAIT_TIMEOUT) return { outcome: 'locked' };
        throw e;
      }
    },
    async find(exec, scope, key) {
      const { rows } = await exec(
        `SELECT id, state, request_hash, response_status, response_headers, response_body, lease_token,
                (expires_at <= UTC_TIMESTAMP(3)) AS expired,
                CASE WHEN locked_until IS NULL THEN 0
                     ELSE GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), locked_until) DIV 1000) END AS lease_remaining_ms,
                GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), expires_at) DIV 1000) AS expires_in_ms
           FROM ${T} WHERE scope = ? AND idempotency_key = ?`,
        [scope, key],
      );
      return rows[0] ? mapIdempotencyRow(rows[0]) : undefined;
    },
    async takeOver(exec, id, expectedToken, p) {
      const { affected } = await exec(
        `UPDATE ${T}
            SET request_hash = ?, state = 'started', lease_token = ?, locked_until = ${plus()},
                created_at = UTC_TIMESTAMP(3), completed_at = NULL, expires_at = ${plus()},
                response_status = NULL, response_headers = NULL, response_body = NULL
          WHERE id = ?
            AND (expires_at <= UTC_TIMESTAMP(3)
                 OR (state = 'started' AND locked_until <= UTC_TIMESTAMP(3) AND lease_token <=> ?))`,
        [p.requestHash, p.leaseToken, p.leaseMs, p.ttlMs, id, expectedToken],
      );
      return affected === 1;
    },
    async complete(exec, p) {
      const { affected } = await exec(
        `UPDATE ${T}
            SET state = 'completed', response_status = ?, response_headers = ?, response_body = ?,
                completed_at = UTC_TIMESTAMP(3), expires_at = ${plus()}, lease_token = NULL, locked_until = NULL
          WHERE id = ? AND lease_token = ? AND state = 'started'`,
        [p.status, p.headers, p.body, p.ttlMs, p.id, p.leaseToken],
      );
      return affected === 1;
    },
    async renew(exec, id, leaseToken, leaseMs) {
      const { affected } = await exec(
        `UPDATE ${T} SET locked_until = ${plus()}
          WHERE id = ? AND lease_token = ? AND state = 'started'`,
        [leaseMs, id, leaseToken],
      );
      return affected === 1;
    },
    async release(exec, id, leaseToken) {
      await exec(`DELETE FROM ${T} WHERE id = ? AND lease_token = ? AND state = 'started'`, [
        id,
        leaseToken,
      ]);
    },
    async evict(exec, scope, key) {
      const { affected } = await exec(`DELETE FROM ${T} WHERE scope = ? AND idempotency_key = ?`, [
        scope,
        key,
      ]);
      return affected;
    },
  };
}
