import type { OutboxDeadFilter, OutboxInsert, OutboxSql } from '../contracts/outbox.contract';
import {
  bySeq,
  mapOutboxRow,
  num,
  OUTBOX_COLUMNS,
  pendingPerRoute,
  statusCounts,
} from '../row-mappers';
import { Binder, chunks, marks, type SqlStyle, sumPerChunk } from './sql-style';

/** How a database spells the parts of a dead-letter filter that differ (times, substrings). */
export interface DeadFilterSpelling {
  /** A time parameter's placeholder read as the column's time type. */
  time(mark: string): string;
  /** A time as bound for {@link DeadFilterSpelling.time}. */
  timeValue(d: Date): unknown;
  /** True when the text of parameter `mark` occurs in `column`, case-insensitively. */
  contains(column: string, mark: string): string;
}

/** A time as UTC text with milliseconds, `YYYY-MM-DD HH:MM:SS.fff` (SQLite, MySQL). */
export const utcText = (d: Date) => d.toISOString().slice(0, 23).replace('T', ' ');

/**
 * The WHERE clause of dead messages matching `f` (status dead and every criterion given), its
 * parameters added to `b`. Exact type and partition key; `failed_at` from `failedAfter`
 * (inclusive) to `failedBefore` (exclusive); the error text as a substring of `last_error`.
 */
export function deadFilterWhere(f: OutboxDeadFilter, b: Binder, d: DeadFilterSpelling): string {
  const where = [`status = 'dead'`];
  if (f.type !== undefined) where.push(`type = ${b.add(f.type)}`);
  if (f.partitionKey !== undefined) where.push(`partition_key = ${b.add(f.partitionKey)}`);
  if (f.failedAfter !== undefined) {
    where.push(`failed_at >= ${d.time(b.add(d.timeValue(f.failedAfter)))}`);
  }
  if (f.failedBefore !== undefined) {
    where.push(`failed_at < ${d.time(b.add(d.timeValue(f.failedBefore)))}`);
  }
  if (f.errorContains !== undefined) where.push(d.contains('last_error', b.add(f.errorContains)));
  return where.join(' AND ');
}

/**
 * The claim's ordering clause (per partition key), the same on every database: a candidate `c`
 * qualifies only when no older row of its partition key is still pending, read through the
 * alias `o`, which carries no skip-locked hint (see each dialect's claim).
 */
export const orderedClause = (T: string, ordered: boolean) =>
  ordered
    ? `AND (c.partition_key IS NULL OR NOT EXISTS (
                 SELECT 1 FROM ${T} AS o
                  WHERE o.partition_key = c.partition_key AND o.status = 'pending' AND o.seq < c.seq))`
    : '';

/**
 * The claim's route clause, the same on every database: only rows routed to one of `routes`
 * (NULL being `default`). The names were validated when the options were read (ROUTE_NAME), so
 * they are written as literals: one statement text per configuration, no extra parameters.
 */
export const routeClause = (routes: readonly string[] | undefined) => {
  if (!routes) return '';
  const names = routes.map((r) => `'${r.replace(/'/g, "''")}'`);
  if (!names.length) return 'AND 1 = 0';
  const withNull = routes.includes('default') ? 'c.route IS NULL OR ' : '';
  return `AND (${withNull}c.route IN (${names.join(', ')}))`;
};

/** What the portable outbox statements need of a database. */
export interface PortableOutboxOptions {
  style: SqlStyle;
  /** The database clock. */
  now: string;
  /** Now plus a millisecond parameter. */
  plusMs(p: string): string;
  /** Most rows (or ids) per statement (parameter limits). */
  chunk: number;
  /** A sequence as the driver binds it (SQLite: a number). */
  seq(s: string): unknown;
  /** The dead-letter filter's database-specific parts. */
  deadFilter: DeadFilterSpelling;
}

type PortableOutbox = Omit<OutboxSql, 'claim' | 'lockKeySlots' | 'fillKeyLockSlots'>;

/**
 * The outbox's counts, the same statements on every database but for the placeholders, the
 * dead-letter filter's spelling and `count` (SQL Server counts statuses with COUNT_BIG(*)).
 */
export function outboxCounts(
  T: string,
  style: SqlStyle,
  deadFilter: DeadFilterSpelling,
  count = 'COUNT(*)',
): Pick<OutboxSql, 'pendingByRoute' | 'countByStatus' | 'countDead'> {
  return {
    async pendingByRoute(exec) {
      const { rows } = await exec(
        `SELECT route, COUNT(*) AS n FROM ${T} WHERE status = 'pending' GROUP BY route`,
      );
      return pendingPerRoute(rows);
    },
    async countByStatus(exec) {
      const { rows } = await exec(`SELECT status, ${count} AS n FROM ${T} GROUP BY status`);
      return statusCounts(rows);
    },
    async countDead(exec, filter) {
      const b = new Binder(style);
      const where = deadFilterWhere(filter, b, deadFilter);
      const { rows } = await exec(`SELECT ${count} AS n FROM ${T} WHERE ${where}`, b.values);
      return num(rows[0]?.n);
    },
  };
}

/** A row's delay as bound: whole non-negative milliseconds. */
export const delayOf = (r: OutboxInsert): number => Math.max(0, Math.floor(r.delayMs));

/**
 * Outbox statements that are the same text on PostgreSQL, MySQL/MariaDB and SQLite but for the
 * placeholders and the clock; a dialect spreads them and overrides what it does its own way.
 */
export function portableOutboxSql(T: string, o: PortableOutboxOptions): PortableOutbox {
  const { style, now } = o;
  const mark = style.mark;
  return {
    async insert(exec, rows) {
      for (const part of chunks(rows, o.chunk)) {
        const params: unknown[] = [];
        const values = part.map((r) => {
          const i = params.length;
          params.push(r.id, r.type, r.payload, r.headers, r.partitionKey, r.route, delayOf(r));
          return `(${marks(style, i, 6)}, 'pending', 0, ${o.plusMs(mark(i + 6))}, ${now})`;
        });
        await exec(
          `INSERT INTO ${T} (id, type, payload, headers, partition_key, route, status, attempts, next_attempt_at, created_at)
           VALUES ${values.join(', ')}`,
          params,
        );
      }
    },
    markSent(exec, seqs, owner) {
      return sumPerChunk(seqs, o.chunk, async (part) => {
        const n = part.length;
        const { affected } = await exec(
          `UPDATE ${T} SET attempts = attempts + 1, status = 'sent', sent_at = ${now}, locked_until = NULL
            WHERE seq IN (${marks(style, 0, n)}) AND lease_owner = ${mark(n)} AND status = 'pending'`,
          [...part.map(o.seq), owner],
        );
        return affected;
      });
    },
    async markFailed(exec, p) {
      const { affected } = await exec(
        `UPDATE ${T}
            SET attempts = attempts + 1, last_error = ${mark(0)}, next_attempt_at = ${o.plusMs(mark(1))},
                status = CASE WHEN ${mark(2)} = 1 THEN 'dead' ELSE 'pending' END,
                failures = ${mark(3)}, failed_at = ${now},
                lease_owner = NULL, locked_until = NULL
          WHERE seq = ${mark(4)} AND lease_owner = ${mark(5)} AND status = 'pending'`,
        [
          p.error,
          Math.max(0, Math.floor(p.retryInMs)),
          p.dead ? 1 : 0,
          p.failures,
          o.seq(p.seq),
          p.owner,
        ],
      );
      return affected === 1;
    },
    release(exec, seqs, owner, error) {
      return sumPerChunk(seqs, o.chunk, async (part) => {
        const n = part.length;
        // Parameters in the order of their placeholders (`?` on MySQL and SQLite): the error first.
        const e = error !== undefined ? 1 : 0;
        const { affected } = await exec(
          `UPDATE ${T} SET lease_owner = NULL, locked_until = NULL${e ? `, last_error = ${mark(0)}` : ''}
            WHERE seq IN (${marks(style, e, n)}) AND lease_owner = ${mark(e + n)} AND status = 'pending'`,
          [...(e ? [error] : []), ...part.map(o.seq), owner],
        );
        return affected;
      });
    },
    async list(exec, p) {
      const where: string[] = [];
      const params: unknown[] = [];
      const add = (column: string, value: unknown) =>
        where.push(`${column} ${mark(params.push(value) - 1)}`);
      if (p.status) add('status =', p.status);
      if (p.partitionKey !== undefined) add('partition_key =', p.partitionKey);
      if (p.afterSeq !== undefined) add('seq >', o.seq(p.afterSeq));
      const { rows } = await exec(
        `SELECT ${OUTBOX_COLUMNS} FROM ${T} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
          ORDER BY seq${p.newestFirst ? ' DESC' : ''} LIMIT ${Math.max(1, Math.floor(p.limit))}`,
        params,
      );
      return rows.map(mapOutboxRow);
    },
    async findByIds(exec, ids) {
      const out = [];
      for (const part of chunks(ids, o.chunk)) {
        const { rows } = await exec(
          `SELECT ${OUTBOX_COLUMNS} FROM ${T} WHERE id IN (${marks(style, 0, part.length)})`,
          [...part],
        );
        out.push(...rows.map(mapOutboxRow));
      }
      return out.sort(bySeq);
    },
    requeue(exec, ids) {
      return sumPerChunk(ids, o.chunk, async (part) => {
        const n = part.length;
        const { affected } = await exec(
          `UPDATE ${T}
              SET status = 'pending', attempts = 0, next_attempt_at = ${now}, lease_owner = NULL, locked_until = NULL, sent_at = NULL
            WHERE id IN (${marks(style, 0, n)}) AND status <> 'pending'`,
          part,
        );
        return affected;
      });
    },
    purgeDead(exec, ids) {
      return sumPerChunk(ids, o.chunk, async (part) => {
        const n = part.length;
        const { affected } = await exec(
          `DELETE FROM ${T} WHERE id IN (${marks(style, 0, n)}) AND status = 'dead'`,
          part,
        );
        return affected;
      });
    },
    ...outboxCounts(T, style, o.deadFilter),
    async deadSeqs(exec, filter, afterSeq, limit) {
      const b = new Binder(style);
      const where = deadFilterWhere(filter, b, o.deadFilter);
      const after = afterSeq !== undefined ? ` AND seq > ${b.add(o.seq(afterSeq))}` : '';
      const { rows } = await exec(
        `SELECT seq FROM ${T} WHERE ${where}${after} ORDER BY seq LIMIT ${Math.max(1, Math.floor(limit))}`,
        b.values,
      );
      return rows.map((r) => String(r.seq));
    },
    requeueDeadSeqs(exec, seqs) {
      return sumPerChunk(seqs, o.chunk, async (part) => {
        const { affected } = await exec(
          `UPDATE ${T}
              SET status = 'pending', attempts = 0, next_attempt_at = ${now}, lease_owner = NULL, locked_until = NULL, sent_at = NULL
            WHERE seq IN (${marks(style, 0, part.length)}) AND status = 'dead'`,
          part.map(o.seq),
        );
        return affected;
      });
    },
    purgeDeadSeqs(exec, seqs) {
      return sumPerChunk(seqs, o.chunk, async (part) => {
        const { affected } = await exec(
          `DELETE FROM ${T} WHERE seq IN (${marks(style, 0, part.length)}) AND status = 'dead'`,
          part.map(o.seq),
        );
        return affected;
      });
    },
  };
}
