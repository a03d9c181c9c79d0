import type { SqlStyle } from '../portable/sql-style';

/** PostgreSQL identifiers: `"name"`, quotes doubled. */
export const quotePostgres = (id: string) => `"${id.replace(/"/g, '""')}"`;

export const POSTGRES_STYLE: SqlStyle = { quote: quotePostgres, mark: (i) => `$${i + 1}` };

/** The database clock: the statement's start (stable within one statement). */
export const PG_NOW = 'statement_timestamp()';

/** Now plus (`+`) or minus (`-`) a millisecond parameter. */
export const pgShiftMs = (p: string, op: '+' | '-' = '+') =>
  `${PG_NOW} ${op} (${p})::bigint * interval '1 millisecond'`;

/** SQLSTATEs after which the transaction is lost and may be retried: serialization failure, deadlock, lock not available. */
const RETRYABLE = new Set(['40001', '40P01', '55P03']);

/** A serialization failure, a deadlock or a lock time-out. */
export function isPostgresRetryable(error: unknown): boolean {
  const e = error as any;
  return RETRYABLE.has(String(e?.driverError?.code ?? e?.code));
}
