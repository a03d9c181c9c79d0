import type { IdempotencySql } from '../contracts/idempotency.contract';
import type { QuotedTables } from '../dialect';
import { mapIdempotencyRow } from '../row-mappers';
import { sqliteNow } from './sqlite.helpers';

/**
 * SQLite keeps reserve-then-complete (no single write): its transactions are deferred, so they
 * take the write lock at their first write. A claim that only read would let another process
 * commit between that read and the handler's first write, and SQLite in WAL mode answers such an
 * upgrade with SQLITE_BUSY_SNAPSHOT at once, without waiting (seen as 503s with two processes on
 * one database file, test/e2e/inbox-full-flow.spec.ts). The reservation insert, as the
 * transaction's first statement, takes the write lock through the busy handler instead.
 *
 * SQLite: one writer, and every transaction is serialized in process by SqliteSerializer, so
 * the insert never meets another transaction's uncommitted row; duplicates of an in-flight
 * request are caught earlier by the store's in-process in-flight registry.
 */
export function sqliteIdempotencySql(t: QuotedTables): IdempotencySql {
  const T = t.idempotency;
  const now = sqliteNow();
  const rowColumns = `id, state, request_hash, response_status, response_headers, response_body, lease_token,
                (expires_at <= ${now}) AS expired,
                CASE WHEN locked_until IS NULL THEN 0
                     ELSE MAX(0, CAST((julianday(locked_until) - julianday('now')) * 86400000 AS INTEGER)) END AS lease_remaining_ms,
                MAX(0, CAST((julianday(expires_at) - julianday('now')) * 86400000 AS INTEGER)) AS expires_in_ms`;
  return {
    async reserve(exec, p) {
      const { rows } = await exec(
        `INSERT INTO ${T} (scope, idempotency_key, request_hash, state, lease_token, locked_until, created_at, expires_at)
         VALUES (?, ?, ?, 'started', ?, ${sqliteNow('?')}, ${now}, ${sqliteNow('?')})
         ON CONFLICT (scope, idempotency_key) DO NOTHING
         RETURNING id`,
        [p.scope, p.key, p.requestHash, p.leaseToken, p.leaseMs, p.ttlMs],
      );
      return rows[0] ? { outcome: 'inserted', id: String(rows[0].id) } : { outcome: 'exists' };
    },
    async find(exec, scope, key) {
      const { rows } = await exec(
        `SELECT ${rowColumns} FROM ${T} WHERE scope = ? AND idempotency_key = ?`,
        [scope, key],
      );
      return rows[0] ? mapIdempotencyRow(rows[0]) : undefined;
    },
    async takeOver(exec, id, expectedToken, p) {
      const { rows } = await exec(
        `UPDATE ${T}
            SET request_hash = ?, state = 'started', lease_token = ?, locked_until = ${sqliteNow('?')},
                created_at = ${now}, completed_at = NULL, expires_at = ${sqliteNow('?')},
                response_status = NULL, response_headers = NULL, response_body = NULL
          WHERE id = ?
            AND (expires_at <= ${now} OR (state = 'started' AND locked_until <= ${now} AND lease_token IS ?))
          RETURNING id`,
        [p.requestHash, p.leaseToken, p.leaseMs, p.ttlMs, id, expectedToken],
      );
      return rows.length === 1;
    },
    async complete(exec, p) {
      const { rows } = await exec(
        `UPDATE ${T}
            SET state = 'completed', response_status = ?, response_headers = ?, response_body = ?,
                completed_at = ${now}, expires_at = ${sqliteNow('?')}, lease_token = NULL, locked_until = NULL
          WHERE id = ? AND lease_token = ? AND state = 'started'
          RETURNING id`,
        [p.status, p.headers, p.body, p.ttlMs, p.id, p.leaseToken],
      );
      return rows.length === 1;
    },
    async renew(exec, id, leaseToken, leaseMs) {
      const { rows } = await exec(
        `UPDATE ${T} SET locked_until = ${sqliteNow('?')}
          WHERE id = ? AND lease_token = ? AND state = 'started'
          RETURNING id`,
        [leaseMs, id, leaseToken],
      );
      return rows.length === 1;
    },
    async release(exec, id, leaseToken) {
      await exec(`DELETE FROM ${T} WHERE id = ? AND lease_token = ? AND state = 'started'`, [
        id,
        leaseToken,
      ]);
    },
    async evict(exec, scope, key) {
      const { rows } = await exec(
        `DELETE FROM ${T} WHERE scope = ? AND idempotency_key = ? RETURNING id`,
        [scope, key],
      );
      return rows.length;
    },
  };
}
