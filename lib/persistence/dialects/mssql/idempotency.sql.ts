import type { IdempotencySql } from '../contracts/idempotency.contract';
import type { QuotedTables } from '../dialect';
import { mapIdempotencyRow } from '../row-mappers';
import { compact } from './mssql.helpers';

/** SQL Server lock request time-out (`SET LOCK_TIMEOUT`, "Lock request time out period exceeded"). */
const LOCK_TIMEOUT_ERROR = 1222;

/**
 * True for a lock time-out reported to the client: SQL Server's 1222, or Babelfish's 33557097
 * ("canceling statement due to lock timeout"). On Babelfish the server has already rolled the
 * transaction back by the time the client hears of it.
 */
export function isMssqlLockTimeout(e: unknown): boolean {
  const err = e as any;
  const numbers = [
    err?.number,
    err?.driverError?.number,
    err?.driverError?.originalError?.info?.number,
    err?.originalError?.info?.number,
  ];
  if (numbers.some((n) => n === LOCK_TIMEOUT_ERROR)) return true;
  // Babelfish's 33557097 is its number for every error it does not map (a missing relation too):
  // only its lock time-out text makes it one.
  const message = String(err?.driverError?.message ?? err?.message ?? '');
  return /lock timeout|lock request time ?out/i.test(message);
}

/**
 * SQL Server (and Babelfish). Times use the database clock (SYSUTCDATETIME(), DATETIME2(3), UTC).
 *
 * Reservation, one batch: the insert runs in nested dynamic SQL (`sp_executesql`) that starts
 * with `SET LOCK_TIMEOUT <lockTimeoutMs>`, so a duplicate meeting another transaction's
 * uncommitted reservation gives up after that wait (error 1222: the key is in flight, 409)
 * instead of queueing behind it. A SET inside dynamic SQL is restored when the dynamic batch
 * returns, whether it succeeded or failed (Microsoft docs, "SET Statements"; checked on Babelfish
 * too), so the pooled connection keeps its own lock timeout. A trailing `SET LOCK_TIMEOUT -1`
 * would not do: on Babelfish a lock time-out aborts the batch and the transaction (error
 * 33557097 "canceling statement due to lock timeout", raised to the client, not catchable by
 * TRY/CATCH), the trailing SET never runs and the setting would stick to the connection. That
 * client-side error is mapped to `locked` as well.
 * The insert is guarded by NOT EXISTS and by the unique (scope, key) index: a committed record
 * makes it insert nothing (no error on the replay path), and duplicate-key errors 2601/2627 of a
 * concurrent insert also mean "exists". When the key exists, the same batch reads the record, so
 * a replay costs one round trip. No MERGE (known concurrency pitfalls, absent on Babelfish).
 * What a duplicate gets depends on when its INSERT reaches the key, not on when it was sent: on
 * Babelfish a pooled connection's first batch is a new backend's first and starts about a second
 * late (measured on 4.3.0, 2 cores), so a duplicate sent while the first request runs may meet
 * its committed record and get the replay instead of 409; both answers are correct.
 */
export function mssqlIdempotencySql(t: QuotedTables): IdempotencySql {
  const T = t.idempotency;
  // DATEADD takes an INT: milliseconds overflow after ~24.8 days, so split into seconds + ms.
  const plus = (p: string, base: string) =>
    `DATEADD(millisecond, CAST(${p} % 1000 AS INT), DATEADD(second, CAST(${p} / 1000 AS INT), ${base}))`;
  // expires_in_ms (the replay cache's bound) is capped at one day: DATEDIFF returns an INT, which
  // overflows for milliseconds past 24 days 20 h (Microsoft's DATEDIFF docs); the cache keeps an
  // entry far less long anyway (maxAgeMs).
  const rowColumns = `id, state, request_hash, response_status, response_headers, response_body, lease_token,
     CASE WHEN expires_at <= @now THEN 1 ELSE 0 END AS expired,
     CASE WHEN locked_until IS NULL OR locked_until <= @now THEN 0
          ELSE DATEDIFF(millisecond, @now, locked_until) END AS lease_remaining_ms,
     CASE WHEN expires_at <= @now THEN 0
          WHEN expires_at >= DATEADD(day, 1, @now) THEN 86400000
          ELSE DATEDIFF(millisecond, @now, expires_at) END AS expires_in_ms`;
  // The dynamic insert, with its own parameters (quotes doubled inside the N'…' literal).
  const insert = (lockTimeoutMs: number) =>
    `SET LOCK_TIMEOUT ${lockTimeoutMs};
     INSERT INTO ${T} (scope, idempotency_key, request_hash, state, lease_token, locked_until, created_at, expires_at)
     SELECT @scope, @key, @hash, ''started'', @token, ${plus('@lease', '@now')}, @now, ${plus('@ttl', '@now')}
     WHERE NOT EXISTS (SELECT 1 FROM ${T} WHERE scope = @scope AND idempotency_key = @key);
     IF @@ROWCOUNT = 1 SET @id = SCOPE_IDENTITY();`;
  const reserveSql = (lockTimeoutMs: number) =>
    compact(
      `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
       DECLARE @id BIGINT = NULL;
       DECLARE @outcome VARCHAR(16) = 'exists';
       BEGIN TRY
         EXEC sp_executesql N'${insert(lockTimeoutMs)}',
           N'@scope NVARCHAR(450), @key NVARCHAR(255), @hash VARBINARY(32), @token VARCHAR(64), @lease BIGINT, @ttl BIGINT, @now DATETIME2(3), @id BIGINT OUTPUT',
           @scope = @0, @key = @1, @hash = @2, @token = @3, @lease = @4, @ttl = @5, @now = @now, @id = @id OUTPUT;
         IF @id IS NOT NULL SET @outcome = 'inserted';
       END TRY
       BEGIN CATCH
         IF ERROR_NUMBER() = ${LOCK_TIMEOUT_ERROR} SET @outcome = 'locked';
         ELSE IF ERROR_NUMBER() NOT IN (2601, 2627) THROW;
       END CATCH;
       SELECT @outcome AS outcome, @id AS inserted_id, r.*
         FROM (SELECT 1 AS one) AS x
         LEFT JOIN (SELECT ${rowColumns} FROM ${T} WHERE scope = @0 AND idempotency_key = @1) AS r
           ON @outcome = 'exists';`,
    );
  const reserveByTimeout = new Map<number, string>();
  // Every statement is built once (per table, and per lock timeout for the reservation).
  const sql = {
    reserve(lockTimeoutMs: number): string {
      let text = reserveByTimeout.get(lockTimeoutMs);
      if (!text) reserveByTimeout.set(lockTimeoutMs, (text = reserveSql(lockTimeoutMs)));
      return text;
    },
    find: compact(
      `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
       SELECT ${rowColumns} FROM ${T} WHERE scope = @0 AND idempotency_key = @1`,
    ),
    takeOver: compact(
      `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
       UPDATE ${T}
          SET request_hash = @1, state = 'started', lease_token = @2, locked_until = ${plus('@3', '@now')},
              created_at = @now, completed_at = NULL, expires_at = ${plus('@4', '@now')},
              response_status = NULL, response_headers = NULL, response_body = NULL
        WHERE id = @0
          AND (expires_at <= @now
               OR (state = 'started' AND locked_until <= @now
                   AND (lease_token = @5 OR (lease_token IS NULL AND @5 IS NULL))));
       SELECT @@ROWCOUNT AS n;`,
    ),
    complete: compact(
      `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
       UPDATE ${T}
          SET state = 'completed', response_status = @2, response_headers = @3, response_body = CONVERT(VARBINARY(MAX), @4),
              completed_at = @now, expires_at = ${plus('@5', '@now')}, lease_token = NULL, locked_until = NULL
        WHERE id = @0 AND lease_token = @1 AND state = 'started';
       SELECT @@ROWCOUNT AS n;`,
    ),
    renew: compact(
      `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
       UPDATE ${T} SET locked_until = ${plus('@2', '@now')}
        WHERE id = @0 AND lease_token = @1 AND state = 'started';
       SELECT @@ROWCOUNT AS n;`,
    ),
    release: compact(`DELETE FROM ${T} WHERE id = @0 AND lease_token = @1 AND state = 'started'`),
    evict: compact(
      `DELETE FROM ${T} WHERE scope = @0 AND idempotency_key = @1; SELECT @@ROWCOUNT AS n;`,
    ),
  };
  return {
    async reserve(exec, p) {
      let rows: any[];
      try {
        const text = sql.reserve(Math.max(0, Math.floor(p.lockTimeoutMs)));
        ({ rows } = await exec(text, [
          p.scope,
          p.key,
          p.requestHash,
          p.leaseToken,
          p.leaseMs,
          p.ttlMs,
        ]));
      } catch (e) {
        // Babelfish raises the lock time-out to the client (its transaction is already rolled
        // back; the nested batch's SET LOCK_TIMEOUT is already undone): the key is in flight.
        if (isMssqlLockTimeout(e)) return { outcome: 'locked' };
        throw e;
      }
      const r = rows[0];
      if (r?.outcome === 'inserted' && r.inserted_id !== null && r.inserted_id !== undefined) {
        return { outcome: 'inserted', id: String(r.inserted_id) };
      }
      if (r?.outcome === 'exists') {
        return {
          outcome: 'exists',
          row: r.id === null || r.id === undefined ? undefined : mapIdempotencyRow(r),
        };
      }
      return { outcome: 'locked' };
    },
    async find(exec, scope, key) {
      const { rows } = await exec(sql.find, [scope, key]);
      return rows[0] ? mapIdempotencyRow(rows[0]) : undefined;
    },
    async takeOver(exec, id, expectedToken, p) {
      const { rows } = await exec(sql.takeOver, [
        id,
        p.requestHash,
        p.leaseToken,
        p.leaseMs,
        p.ttlMs,
        expectedToken,
      ]);
      return Number(rows[0]?.n) === 1;
    },
    async complete(exec, p) {
      const { rows } = await exec(sql.complete, [
        p.id,
        p.leaseToken,
        p.status,
        p.headers,
        p.body,
        p.ttlMs,
      ]);
      return Number(rows[0]?.n) === 1;
    },
    async renew(exec, id, leaseToken, leaseMs) {
      const { rows } = await exec(sql.renew, [id, leaseToken, leaseMs]);
      return Number(rows[0]?.n ?? 0) === 1;
    },
    async release(exec, id, leaseToken) {
      await exec(sql.release, [id, leaseToken]);
    },
    async evict(exec, scope, key) {
      const { rows } = await exec(sql.evict, [scope, key]);
      return Number(rows[0]?.n ?? 0);
    },
  };
}
