import type { SqlStyle } from '../portable/sql-style';

/** SQL Server identifiers: `[name]`, `]` doubled. */
export const quoteMssql = (id: string) => `[${id.replace(/]/g, ']]')}]`;

/** Parameters `@0`, `@1`, … (the mssql driver's positional names through TypeORM). */
export const MSSQL_STYLE: SqlStyle = { quote: quoteMssql, mark: (i) => `@${i}` };

/**
 * Collapses whitespace. A request over one TDS packet (4096 bytes by default, and the SQL text
 * travels as UTF-16) goes out in several TCP writes; tedious leaves Nagle's algorithm on, so the
 * last one waits for the server's delayed ACK (~40 ms). Compact statements fit in one packet.
 */
export const compact = (sql: string) => sql.replace(/\s+/g, ' ').trim();

/**
 * `base` plus (or minus) a millisecond parameter. DATEADD takes an INT: milliseconds overflow
 * after ~24.8 days, so the amount is split into seconds + ms.
 */
export const dateAddMs = (p: string, base: string, sign: '' | '-' = '') =>
  `DATEADD(millisecond, ${sign}CAST(${p} % 1000 AS INT), DATEADD(second, ${sign}CAST(${p} / 1000 AS INT), ${base}))`;

/** The `n` of a batch ending in `SELECT @@ROWCOUNT AS n`. */
export const rowcount = (rows: any[]) => Number(rows[0]?.n ?? 0);

/** SQL Server error numbers of a duplicate key (unique index, primary key / unique constraint). */
export const DUPLICATE_KEY = '2601, 2627';

/** Deadlock victim (1205), lock request time-out (1222): the statement or transaction may run again. */
const RETRYABLE = new Set([1205, 1222]);

/** The error number of a SQL Server error, wherever the driver and TypeORM put it. */
export const mssqlErrorNumber = (e: unknown): number | undefined => {
  const x = e as any;
  const n =
    x?.number ??
    x?.driverError?.number ??
    x?.originalError?.info?.number ??
    x?.driverError?.originalError?.info?.number;
  return n === undefined ? undefined : Number(n);
};

/** A deadlock victim or a lock request time-out. */
export function isMssqlRetryable(error: unknown): boolean {
  const n = mssqlErrorNumber(error);
  return n !== undefined && RETRYABLE.has(n);
}
