import type { IdempotencySql } from '../contracts/idempotency.contract';
import type { QuotedTables } from '../dialect';
import { someCause } from '../driver-errors';
import { mapIdempotencyRow } from '../row-mappers';

/** SQLSTATE unique_violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * PostgreSQL. Times use the database clock (statement_timestamp()).
 * In-flight detection: the reservation takes a transaction-scoped advisory lock on the
 * (scope, key) hash with pg_try_advisory_xact_lock in the same statement as the insert, so a
 * duplicate of an uncommitted reservation never queues behind it: it answers "locked" (409) at
 * once, with no lock wait and no extra statement. The lock is released at commit or rollback.
 */
export function postgresIdempotencySql(t: QuotedTables): IdempotencySql {
  const sql = statements(t.idempotency);
  return {
    singleWrite: {
      async claim(exec, p) {
        // The key's transaction-scoped advisory lock (the same lock the reservation statement
        // takes, so both paths exclude each other) and the key's record, in one statement, with
        // no row written. The record is read with the statement's snapshot: one committed after
        // it but before our lock is not seen, and insertCompleted's unique index catches it.
        const { rows } = await exec(sql.claim, [p.scope, p.key], PREPARED);
        const r = rows[0];
        const row = r && r.id !== null && r.id !== undefined ? mapIdempotencyRow(r) : undefined;
        return { locked: r?.ok === false, row };
      },
      async insertCompleted(exec, p) {
        if (p.replace) {
          const { rows } = await exec(
            sql.replaceCompleted,
            [
              p.replace.id,
              p.requestHash,
              p.status,
              p.headers,
              p.body,
              p.ttlMs,
              p.replace.expectedToken,
            ],
            PREPARED,
          );
          return rows.length === 1;
        }
        // No ON CONFLICT: a record of the key committed after our claim's snapshot fails the
        // statement (unique violation), so that a COMMIT sent with it (see round-trips.ts) is
        // skipped by the server and the transaction rolls back; the caller answers that record.
        try {
          const { rows } = await exec(
            sql.insertCompleted,
            [p.scope, p.key, p.requestHash, p.status, p.headers, p.body, p.ttlMs],
            PREPARED_LAST,
          );
          return rows.length === 1;
        } catch (e) {
          if (someCause(e, (c) => c?.code === UNIQUE_VIOLATION)) return false;
          throw e;
        }
      },
    },
    async reserve(exec, p) {
      // When the key exists, the record comes back in the same statement (a replay is one round
      // trip). NOT EXISTS keeps a replay from even attempting the insert: a speculative insertion
      // that meets a conflict still takes a transaction id, so the replay would pay a WAL flush
      // at commit like a write; it is read with the statement's snapshot, so a record committed after that
      // snapshot is not there and the caller reads it with find().
      const { rows } = await exec(
        sql.reserve,
        [p.scope, p.key, p.requestHash, p.leaseToken, p.leaseMs, p.ttlMs],
        PREPARED,
      );
      const r = rows[0];
      if (!r) return { outcome: 'locked' };
      if (r.inserted_id !== null && r.inserted_id !== undefined) {
        return { outcome: 'inserted', id: String(r.inserted_id) };
      }
      const row = r.id === null || r.id === undefined ? undefined : mapIdempotencyRow(r);
      // Another transaction holds the key's advisory lock: an uncommitted reservation, a
      // take-over in progress, or just a concurrent replay's transaction. A committed, live
      // record answers for itself (replay, mismatch, or 409 by its lease); otherwise the key is
      // in flight: 409 at once.
      if (r.ok === false) {
        return row && !row.expired ? { outcome: 'exists', row } : { outcome: 'locked' };
      }
      return { outcome: 'exists', row };
    },
    async find(exec, scope, key) {
      const { rows } = await exec(sql.find, [scope, key], PREPARED);
      return rows[0] ? mapIdempotencyRow(rows[0]) : undefined;
    },
    async takeOver(exec, id, expectedToken, p) {
      const { rows } = await exec(
        sql.takeOver,
        [id, p.requestHash, p.leaseToken, p.leaseMs, p.ttlMs, expectedToken],
        PREPARED,
      );
      return rows.length === 1;
    },
    async complete(exec, p) {
      // In the reservation's own transaction the expiry stays as reserved: no indexed column
      // changes, so with the table's fillfactor the update is HOT (no new index entries). In
      // another transaction (leased mode) the record lives at least ttl from now: a reserved
      // expiry that is later already (leased reservations add one lease) stays, so the common
      // completion within a lease is HOT too.
      const params: unknown[] = [p.id, p.leaseToken, p.status, p.headers, p.body];
      if (!p.sameTransaction) params.push(p.ttlMs);
      const { rows } = await exec(
        p.sameTransaction ? sql.completeKeepingExpiry : sql.complete,
        params,
        PREPARED,
      );
      return rows.length === 1;
    },
    async renew(exec, id, leaseToken, leaseMs) {
      const { rows } = await exec(sql.renew, [id, leaseToken, leaseMs], PREPARED);
      return rows.length === 1;
    },
    async release(exec, id, leaseToken) {
      await exec(sql.release, [id, leaseToken], PREPARED);
    },
    async evict(exec, scope, key) {
      const { rows } = await exec(sql.evict, [scope, key], PREPARED);
      return rows.length;
    },
  };
}

const PREPARED = { prepare: true } as const;
const PREPARED_LAST = { prepare: true, last: true } as const;

/**
 * The ledger's statements on table `T`, written once per dialect instance: each request passes
 * the same string objects, so naming a prepared statement and checking that the connection has
 * prepared that text compare two references, where texts built on every call would be hashed and
 * compared character by character each time.
 */
function statements(T: string) {
  const ms = (p: string) => `statement_timestamp() + (${p})::bigint * interval '1 millisecond'`;
  const rowColumns = `id, state, request_hash, response_status, response_headers, response_body, lease_token,
     (expires_at <= statement_timestamp()) AS expired,
     CASE WHEN locked_until IS NULL THEN 0
          ELSE GREATEST(0, CEIL(EXTRACT(EPOCH FROM (locked_until - statement_timestamp())) * 1000))::bigint END AS lease_remaining_ms,
     GREATEST(0, FLOOR(EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000))::bigint AS expires_in_ms`;
  const lockKey = `hashtextextended($1 || chr(31) || $2, 7340)`;
  const complete = (expiry: string) =>
    `UPDATE ${T}
            SET state = 'completed', response_status = $3, response_headers = $4, response_body = $5,
                completed_at = statement_timestamp(), lease_token = NULL, locked_until = NULL${expiry}
          WHERE id = $1 AND lease_token = $2 AND state = 'started'
          RETURNING id`;
  return {
    claim: `SELECT pg_try_advisory_xact_lock(${lockKey}) AS ok, r.*
             FROM (SELECT 1) AS one
             LEFT JOIN (SELECT ${rowColumns} FROM ${T} WHERE scope = $1 AND idempotency_key = $2) AS r ON true`,
    replaceCompleted: `UPDATE ${T}
                SET request_hash = $2, state = 'completed', response_status = $3, response_headers = $4,
                    response_body = $5, lease_token = NULL, locked_until = NULL,
                    created_at = statement_timestamp(), completed_at = statement_timestamp(),
                    expires_at = ${ms('$6')}
              WHERE id = $1
                AND (expires_at <= statement_timestamp()
                     OR (state = 'started' AND locked_until <= statement_timestamp() AND lease_token IS NOT DISTINCT FROM $7))
              RETURNING id`,
    insertCompleted: `INSERT INTO ${T} (scope, idempotency_key, request_hash, state, response_status, response_headers,
                               response_body, created_at, completed_at, expires_at)
             VALUES ($1, $2, $3, 'completed', $4, $5, $6, statement_timestamp(), statement_timestamp(), ${ms('$7')})
             RETURNING id`,
    reserve: `WITH lk AS (SELECT pg_try_advisory_xact_lock(${lockKey}) AS ok),
         ins AS (
           INSERT INTO ${T} (scope, idempotency_key, request_hash, state, lease_token, locked_until, created_at, expires_at)
           SELECT $1, $2, $3, 'started', $4, ${ms('$5')}, statement_timestamp(), ${ms('$6')}
           FROM lk WHERE lk.ok AND NOT EXISTS (SELECT 1 FROM ${T} WHERE scope = $1 AND idempotency_key = $2)
           ON CONFLICT (scope, idempotency_key) DO NOTHING
           RETURNING id
         )
         SELECT lk.ok, (SELECT id FROM ins) AS inserted_id, r.*
           FROM lk
           LEFT JOIN (SELECT ${rowColumns} FROM ${T} WHERE scope = $1 AND idempotency_key = $2) AS r
             ON NOT EXISTS (SELECT 1 FROM ins)`,
    find: `SELECT ${rowColumns} FROM ${T} WHERE scope = $1 AND idempotency_key = $2`,
    takeOver: `UPDATE ${T}
            SET request_hash = $2, state = 'started', lease_token = $3, locked_until = ${ms('$4')},
                created_at = statement_timestamp(), completed_at = NULL, expires_at = ${ms('$5')},
                response_status = NULL, response_headers = NULL, response_body = NULL
          WHERE id = $1
            AND (expires_at <= statement_timestamp()
                 OR (state = 'started' AND locked_until <= statement_timestamp() AND lease_token IS NOT DISTINCT FROM $6))
          RETURNING id`,
    complete: complete(`, expires_at = GREATEST(expires_at, ${ms('$6')})`),
    completeKeepingExpiry: complete(''),
    renew: `UPDATE ${T} SET locked_until = ${ms('$3')}
          WHERE id = $1 AND lease_token = $2 AND state = 'started'
          RETURNING id`,
    release: `DELETE FROM ${T} WHERE id = $1 AND lease_token = $2 AND state = 'started'`,
    evict: `DELETE FROM ${T} WHERE scope = $1 AND idempotency_key = $2 RETURNING id`,
  };
}
