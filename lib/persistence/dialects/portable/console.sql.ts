import type { ConsoleSql, InboxListParams, InboxStatusCount } from '../contracts/console.contract';
import type { QuotedTables } from '../dialect';
import { dbTime, mapInboxRow, num, str } from '../row-mappers';
import { Binder, type SqlStyle } from './sql-style';

/** What differs in the console's reads between PostgreSQL, MySQL/MariaDB and SQLite. */
export interface ConsoleClock {
  /** Whole minutes from a time column to now (database clock), truncated. */
  minutesAgo(column: string): string;
  /** Now minus a millisecond parameter, comparable with the time columns. */
  ago(mark: string): string;
}

export const INBOX_COLUMNS =
  'consumer, message_id, status, attempts, received_at, processed_at, last_error';

/** Maps the rows of a per-consumer, per-status count. */
export function inboxStatusCounts(rows: any[]): InboxStatusCount[] {
  return rows.map((r) => ({ consumer: str(r.consumer), status: r.status, count: num(r.n) }));
}

/** Maps the one row of a ledger record's times (undefined when there is none). */
export function recordTimes(r: any) {
  if (!r) return undefined;
  return {
    createdAt: dbTime(r.created_at) ?? new Date(NaN),
    completedAt: dbTime(r.completed_at),
    expiresAt: dbTime(r.expires_at) ?? new Date(NaN),
  };
}

/** The inbox list's WHERE clause ('' when it is not filtered), its parameters added to `b`. */
export function inboxListWhere(p: InboxListParams, b: Binder): string {
  const where: string[] = [];
  if (p.consumer !== undefined) where.push(`consumer = ${b.add(p.consumer)}`);
  if (p.status !== undefined) where.push(`status = ${b.add(p.status)}`);
  return where.length ? `WHERE ${where.join(' AND ')}` : '';
}

/** The console's statements whose rows every database returns alike. */
export interface ConsoleStatements {
  /** consumer, status, n: the inbox's rows per consumer and status. */
  inboxCounts: string;
  /** minutes_ago, sent: the outbox's sent rows per minute; one parameter, the window in ms. */
  sentPerMinute: string;
  /** created_at, completed_at, expires_at of a ledger record; parameters: scope, key. */
  times: string;
}

/** The console's reads that run a dialect's statement and map its rows the same way everywhere. */
export function consoleReads(
  sql: ConsoleStatements,
): Pick<ConsoleSql, 'inboxCounts' | 'outboxSentPerMinute' | 'idempotencyTimes'> {
  return {
    async inboxCounts(exec) {
      const { rows } = await exec(sql.inboxCounts);
      return inboxStatusCounts(rows);
    },
    async outboxSentPerMinute(exec, minutes) {
      const { rows } = await exec(sql.sentPerMinute, [Math.floor(minutes) * 60_000]);
      return rows.map((r) => ({ minutesAgo: num(r.minutes_ago), sent: num(r.sent) }));
    },
    async idempotencyTimes(exec, scope, key) {
      const { rows } = await exec(sql.times, [scope, key]);
      return recordTimes(rows[0]);
    },
  };
}

/**
 * The console's reads on PostgreSQL, MySQL/MariaDB and SQLite (MVCC or consistent non-locking
 * reads: they never wait on the relay or a consumer). The inbox list walks the received_at index
 * backwards; the sent-per-minute figure reads the partial index of sent rows over a time window.
 */
export function portableConsoleSql(
  t: QuotedTables,
  style: SqlStyle,
  clock: ConsoleClock,
): ConsoleSql {
  const sentPerMinute = `SELECT ${clock.minutesAgo('sent_at')} AS minutes_ago, COUNT(*) AS sent
      FROM ${t.outbox} WHERE status = 'sent' AND sent_at >= ${clock.ago(style.mark(0))}
     GROUP BY minutes_ago`;
  const times = `SELECT created_at, completed_at, expires_at FROM ${t.idempotency}
     WHERE scope = ${style.mark(0)} AND idempotency_key = ${style.mark(1)}`;
  return {
    async inboxList(exec, p) {
      const b = new Binder(style);
      const where = inboxListWhere(p, b);
      const { rows } = await exec(
        `SELECT ${INBOX_COLUMNS} FROM ${t.inbox}
          ${where}
          ORDER BY received_at DESC LIMIT ${Math.max(1, Math.floor(p.limit))}`,
        b.values,
      );
      return rows.map(mapInboxRow);
    },
    ...consoleReads({
      inboxCounts: `SELECT consumer, status, COUNT(*) AS n FROM ${t.inbox} GROUP BY consumer, status ORDER BY consumer`,
      sentPerMinute,
      times,
    }),
  };
}
