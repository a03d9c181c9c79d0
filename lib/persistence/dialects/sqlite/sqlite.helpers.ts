import type { SqlStyle } from '../portable/sql-style';

/** SQLite identifiers: `"name"`, quotes doubled. */
export const quoteSqlite = (id: string) => `"${id.replace(/"/g, '""')}"`;

export const SQLITE_STYLE: SqlStyle = { quote: quoteSqlite, mark: () => '?' };

/** Current UTC time as SQLite text with milliseconds, optionally plus a parameter in ms. */
export const sqliteNow = (plusParam?: string) =>
  plusParam
    ? `strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || ((${plusParam}) / 1000.0) || ' seconds')`
    : `strftime('%Y-%m-%d %H:%M:%f', 'now')`;

/** Current UTC time minus a millisecond parameter. */
export const sqliteAgo = (p = '?') =>
  `strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ((${p}) / 1000.0) || ' seconds')`;

/** The SQLite result code of an error (SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT, …), or ''. */
export const sqliteCode = (error: unknown): string =>
  String((error as any)?.driverError?.code ?? (error as any)?.code ?? '');
