/**
 * A configuration error of the app (the library's tables missing or at an older migration, the
 * nestjs-cls transactional plugin missing, a write outside the request's transaction): a bug of
 * the deployment, not of the request and not a passing outage. Answered 500
 * (`urn:nestjs-exactly-once:problem:misconfigured`, no `Retry-After`): retrying cannot help.
 */
export class IdempotencyMisconfiguredError extends Error {
  override readonly name = 'IdempotencyMisconfiguredError';
}

/**
 * Whether an error means "the app is wired wrong": one of the library's configuration errors,
 * or a database error saying that a table, column or schema does not exist. The drivers report
 * these in their own ways; every form is listed here, in one place:
 * - PostgreSQL (pg): SQLSTATE 42P01 (undefined table), 42703 (undefined column), 3F000
 *   (invalid schema name).
 * - MySQL / MariaDB (mysql2): ER_NO_SUCH_TABLE (errno 1146), ER_BAD_FIELD_ERROR (1054).
 * - SQL Server (mssql / tedious): error numbers 208 ("Invalid object name"), 207 ("Invalid
 *   column name", SQ_BADCOL).
 * - SQLite (better-sqlite3): SQLITE_ERROR "no such table", "no such column", "table … has no
 *   column named …".
 */
export function isMisconfiguration(error: unknown): boolean {
  const seen = new Set<unknown>();
  let e: any = error;
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    if (matches(e)) return true;
    e = e.driverError ?? e.originalError ?? e.cause;
  }
  return false;
}

const PG_SQLSTATES = new Set(['42P01', '42703', '3F000']);
const MYSQL_CODES = new Set(['ER_NO_SUCH_TABLE', 'ER_BAD_FIELD_ERROR']);
const MYSQL_ERRNOS = new Set([1146, 1054]);
const MSSQL_NUMBERS = new Set([207, 208]);
const SQLITE_MESSAGES = [/^no such table: /, /^no such column: /, /has no column named /];

function matches(e: any): boolean {
  if (e instanceof IdempotencyMisconfiguredError) return true;
  const code = e.code;
  if (typeof code === 'string') {
    if (PG_SQLSTATES.has(code) || MYSQL_CODES.has(code)) return true;
    if (code.startsWith('SQLITE_ERROR')) {
      const message = typeof e.message === 'string' ? e.message : '';
      return SQLITE_MESSAGES.some((re) => re.test(message));
    }
  }
  if (typeof e.errno === 'number' && typeof e.sqlState === 'string' && MYSQL_ERRNOS.has(e.errno))
    return true;
  return typeof e.number === 'number' && MSSQL_NUMBERS.has(e.number);
}
