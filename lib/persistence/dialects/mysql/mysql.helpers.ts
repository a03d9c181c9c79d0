import type { SqlStyle } from '../portable/sql-style';

/** MySQL/MariaDB identifiers: `` `name` ``, backticks doubled. */
export const quoteMysql = (id: string) => `\`${id.replace(/`/g, '``')}\``;

export const MYSQL_STYLE: SqlStyle = { quote: quoteMysql, mark: () => '?' };

/** The database clock in UTC with milliseconds. */
export const MYSQL_NOW = 'UTC_TIMESTAMP(3)';

/** Now plus (`DATE_ADD`) or minus (`DATE_SUB`) a millisecond parameter. */
export const mysqlShiftMs = (fn: 'DATE_ADD' | 'DATE_SUB', p = '?') =>
  `${fn}(${MYSQL_NOW}, INTERVAL (${p}) * 1000 MICROSECOND)`;

/** ER_DUP_ENTRY. */
export const ER_DUP_ENTRY = 1062;

/** Lock wait time-out (1205), deadlock victim (1213). */
const RETRYABLE = new Set([1205, 1213]);

/** The errno of a MySQL error, wherever mysql2 and TypeORM put it. */
export const mysqlErrno = (e: unknown): number | undefined =>
  (e as any)?.driverError?.errno ?? (e as any)?.errno;

/** A lock wait time-out or a deadlock victim. */
export function isMysqlRetryable(error: unknown): boolean {
  const n = mysqlErrno(error);
  return n !== undefined && RETRYABLE.has(n);
}
