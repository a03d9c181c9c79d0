import { QueryRunnerAlreadyReleasedError } from 'typeorm';

/*
 * What the drivers' errors mean, for every database in one place: "unavailable for now" (503)
 * and "the app is wired wrong" (500). The cause-chain walks live with their callers
 * (persistence/database-unavailable.ts, database-misconfigured.ts).
 */

/** Whether `error` or one of its causes (driverError, originalError, cause) satisfies `test`. */
export function someCause(error: unknown, test: (e: any) => boolean): boolean {
  const seen = new Set<unknown>();
  let e: any = error;
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    if (test(e)) return true;
    e = e.driverError ?? e.originalError ?? e.cause;
  }
  return false;
}

/**
 * Whether one error object (not its causes) means "the database could not do this right now"
 * (connection refused, lost or reset, server shutting down, too many connections, a deadlock victim, a lock or connect
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
 *   40613, 40197, 49918-49920 (not 4060, "cannot open database": a configuration error);
 *   tedious' EINVALIDSTATE "… not the Final state": a statement sent on a connection the server
 *   has ended (its session killed, the server gone) while a transaction still held it (seen on
 *   Babelfish 4.3 after `KILL <spid>`; tedious raises it before anything is sent, so it is the
 *   same on SQL Server). EINVALIDSTATE in any other state is a request sent while another runs on
 *   the same connection: a fault of the code, left a 500.
 * - SQLite (better-sqlite3): SQLITE_BUSY* (another process holds the file past the busy time-out).
 * - TypeORM: a statement on a query runner released after its connection failed.
 */
/** Codes of a connection that was open and has ended (a subset of SOCKET_CODES). */
const CONNECTION_LOST_CODES = new Set([
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  // mssql / tedious
  'ESOCKET',
  'ECONNCLOSED',
  'ECLOSE',
  // mysql2
  'PROTOCOL_CONNECTION_LOST',
]);
/**
 * mssql: a socket's loss reported as a request error (code EREQUEST) carrying only the socket
 * error's text, e.g. "Error: read ECONNRESET" (seen with a session killed mid-statement under
 * load on Babelfish 4.3; the driver builds it, so SQL Server gives the same).
 */
const SOCKET_LOST_TEXT =
  /^(?:Error: )*(?:(?:read|write) (?:ECONNRESET|EPIPE|ECONNABORTED)|socket hang up|Connection lost - .*)$/;
const SOCKET_CODES = new Set<string>([
  ...CONNECTION_LOST_CODES,
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  // mssql / tedious connection errors
  'ETIMEOUT',
  'ENOTOPEN',
  // mysql2
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
]);
const UNAVAILABLE_PG_SQLSTATES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '40001',
  '40P01',
  '55P03',
]);
/** PostgreSQL: administrator and crash shutdown (the connection ended under the statement). */
const CONNECTION_LOST_PG_SQLSTATES = new Set(['57P01', '57P02']);
/** mysql2: 2006 server gone, 2013 connection lost during a query. */
const CONNECTION_LOST_MYSQL_ERRNOS = new Set([2006, 2013]);
const UNAVAILABLE_MYSQL_ERRNOS = new Set([1040, 1205, 1213, 2002, 2006, 2013]);
const UNAVAILABLE_MSSQL_NUMBERS = new Set([1205, 1222, 40501, 40613, 40197, 49918, 49919, 49920]);
/** tedious' state once the connection has ended (`Connection.STATE.FINAL`). */
const TEDIOUS_ENDED = /not the Final state$/;
const PG_CONNECTION_LOST_MESSAGES = [
  /^Connection terminated/,
  /Client has encountered a connection error and is not queryable/,
  /^terminating connection/,
];
const PG_MESSAGES = [...PG_CONNECTION_LOST_MESSAGES, /timeout exceeded when trying to connect/];
const CONNECTION_LOST_MESSAGES = [...PG_CONNECTION_LOST_MESSAGES, SOCKET_LOST_TEXT];

/**
 * Whether one error object (not its causes) says that the connection a statement ran on has
 * ended under it (reset, closed, the session killed, the server shut down): the narrower part of
 * "unavailable" in which a transaction on that connection is gone, whatever the statement was.
 * TypeORM releases a PostgreSQL or MySQL transaction's query runner when this happens; it leaves
 * a SQL Server one in place, so its callers learn it from the error.
 */
export function isConnectionLostDriverError(e: any): boolean {
  if (e instanceof QueryRunnerAlreadyReleasedError) return true;
  const code = e.code;
  if (typeof code === 'string') {
    if (CONNECTION_LOST_CODES.has(code)) return true;
    if (code === 'EINVALIDSTATE') return TEDIOUS_ENDED.test(String(e.message));
    if (isConnectionSqlState(code, CONNECTION_LOST_PG_SQLSTATES)) return true;
  }
  if (hasMysqlErrno(e, CONNECTION_LOST_MYSQL_ERRNOS)) return true;
  const message = messageOf(e);
  return CONNECTION_LOST_MESSAGES.some((re) => re.test(message));
}

export function isUnavailableDriverError(e: any): boolean {
  // A lost connection is unavailable too (each of its tests is narrower than one below).
  if (isConnectionLostDriverError(e)) return true;
  const code = e.code;
  if (typeof code === 'string') {
    // Only in tedious' ended state, which the connection-lost test has answered.
    if (code === 'EINVALIDSTATE') return false;
    if (SOCKET_CODES.has(code) || code.startsWith('SQLITE_BUSY')) return true;
    if (isConnectionSqlState(code, UNAVAILABLE_PG_SQLSTATES)) return true;
  }
  if (hasMysqlErrno(e, UNAVAILABLE_MYSQL_ERRNOS)) return true;
  if (typeof e.number === 'number' && UNAVAILABLE_MSSQL_NUMBERS.has(e.number)) return true;
  const message = messageOf(e);
  return PG_MESSAGES.some((re) => re.test(message)) || SOCKET_LOST_TEXT.test(message);
}

/**
 * Whether one error object (not its causes) is a database error saying that a table, column or schema does not exist. The drivers report
 * these in their own ways; every form is listed here, in one place:
 * - PostgreSQL (pg): SQLSTATE 42P01 (undefined table), 42703 (undefined column), 3F000
 *   (invalid schema name).
 * - MySQL / MariaDB (mysql2): ER_NO_SUCH_TABLE (errno 1146), ER_BAD_FIELD_ERROR (1054).
 * - SQL Server (mssql / tedious): error numbers 208 ("Invalid object name"), 207 ("Invalid
 *   column name", SQ_BADCOL). Babelfish reports these as its generic 33557097 with
 *   PostgreSQL's text (`relation "x" does not exist`, `column "x" does not exist`).
 * - SQLite (better-sqlite3): SQLITE_ERROR "no such table", "no such column", "table … has no
 *   column named …".
 */
const MISCONFIGURED_PG_SQLSTATES = new Set(['42P01', '42703', '3F000']);
const MISCONFIGURED_MYSQL_CODES = new Set(['ER_NO_SUCH_TABLE', 'ER_BAD_FIELD_ERROR']);
const MISCONFIGURED_MYSQL_ERRNOS = new Set([1146, 1054]);
const MISCONFIGURED_MSSQL_NUMBERS = new Set([207, 208]);
const BABELFISH_UNMAPPED_ERROR = 33557097;
const BABELFISH_MISCONFIGURED_MESSAGES = [
  /^relation ".*" does not exist/,
  /^column ".*" does not exist/,
];
const MISCONFIGURED_SQLITE_MESSAGES = [
  /^no such table: /,
  /^no such column: /,
  /has no column named /,
];

export function isMisconfiguredDriverError(e: any): boolean {
  const code = e.code;
  if (typeof code === 'string') {
    if (MISCONFIGURED_PG_SQLSTATES.has(code) || MISCONFIGURED_MYSQL_CODES.has(code)) return true;
    if (code.startsWith('SQLITE_ERROR')) {
      const message = messageOf(e);
      return MISCONFIGURED_SQLITE_MESSAGES.some((re) => re.test(message));
    }
  }
  if (hasMysqlErrno(e, MISCONFIGURED_MYSQL_ERRNOS)) return true;
  if (typeof e.number !== 'number') return false;
  if (MISCONFIGURED_MSSQL_NUMBERS.has(e.number)) return true;
  const message = messageOf(e);
  return (
    e.number === BABELFISH_UNMAPPED_ERROR &&
    BABELFISH_MISCONFIGURED_MESSAGES.some((re) => re.test(message))
  );
}

/**
 * A SQLSTATE (PostgreSQL's `code`; five characters) of class 08, "connection exception", or one
 * of `others`.
 */
function isConnectionSqlState(code: string, others: ReadonlySet<string>): boolean {
  return /^[0-9A-Z]{5}$/.test(code) && (code.startsWith('08') || others.has(code));
}

/** A mysql2 server error (an `errno` with its `sqlState`) whose errno is one of `errnos`. */
function hasMysqlErrno(e: any, errnos: ReadonlySet<number>): boolean {
  return typeof e.errno === 'number' && typeof e.sqlState === 'string' && errnos.has(e.errno);
}

/** The error's message, or '' when it has none. */
function messageOf(e: any): string {
  return typeof e.message === 'string' ? e.message : '';
}
