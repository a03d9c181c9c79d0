import { QueryRunnerAlreadyReleasedError } from 'typeorm';

/**
 * Whether an error means "the database could not do this right now" (connection refused, lost
 * or reset, server shutting down, too many connections, a deadlock victim, a lock or connect
 * time-out, a SQLite file busy), as opposed to a fault of the request or of the code: answered
 * 503 with Retry-After rather than 500, since the same request (with the same Idempotency-Key)
 * can succeed a moment later and nothing of it was committed.
 *
 * The drivers report these in their own ways; every form is listed here, in one place:
 * - Node sockets (all drivers): ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, EHOSTUNREACH…
 * - PostgreSQL (pg): SQLSTATE class 08 (connection exception), 57P01-57P03 (shutdown, cannot
 *   connect now), 53300 (too many connections), 40001 / 40P01 (serialization failure, deadlock),
 *   55P03 (lock not available); pg's own "Connection terminated…" and pool time-out messages.
 * - MySQL / MariaDB (mysql2): PROTOCOL_CONNECTION_LOST, errno 1040 (too many connections), 1205
 *   (lock wait time-out), 1213 (deadlock), 2002 / 2006 / 2013 (cannot connect, gone, lost).
 * - SQL Server (mssql / tedious): ESOCKET, ECONNCLOSED, ETIMEOUT, ENOTOPEN codes; error numbers
 *   1205 (deadlock victim), 1222 (lock request time-out), and Azure SQL's transient 40501,
 *   40613, 40197, 49918-49920 (not 4060, "cannot open database": a configuration error).
 * - SQLite (better-sqlite3): SQLITE_BUSY* (another process holds the file past the busy time-out).
 * - TypeORM: a statement on a query runner released after its connection failed.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  let e: any = error;
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    if (matches(e)) return true;
    e = e.driverError ?? e.originalError ?? e.cause;
  }
  return false;
}

const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  // mssql / tedious connection errors
  'ESOCKET',
  'ECONNCLOSED',
  'ETIMEOUT',
  'ENOTOPEN',
  // mysql2
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
]);
const PG_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '40001', '40P01', '55P03']);
const MYSQL_ERRNOS = new Set([1040, 1205, 1213, 2002, 2006, 2013]);
const MSSQL_NUMBERS = new Set([1205, 1222, 40501, 40613, 40197, 49918, 49919, 49920]);
const PG_MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /Client has encountered a connection error and is not queryable/,
  /^terminating connection/,
];

function matches(e: any): boolean {
  if (e instanceof QueryRunnerAlreadyReleasedError) return true;
  const code = e.code;
  if (typeof code === 'string') {
    if (SOCKET_CODES.has(code)) return true;
    if (code.startsWith('SQLITE_BUSY')) return true;
    // SQLSTATE (PostgreSQL; mysql2 puts it in sqlState): class 08 is "connection exception".
    if (/^[0-9A-Z]{5}$/.test(code) && (code.startsWith('08') || PG_SQLSTATES.has(code)))
      return true;
  }
  if (typeof e.errno === 'number' && typeof e.sqlState === 'string' && MYSQL_ERRNOS.has(e.errno))
    return true;
  if (typeof e.number === 'number' && MSSQL_NUMBERS.has(e.number)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return PG_MESSAGES.some((re) => re.test(message));
}
