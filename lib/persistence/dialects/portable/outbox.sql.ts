import type { OutboxInsert, OutboxSql } from '../contracts/outbox.contract';
import { bySeq, mapOutboxRow, OUTBOX_COLUMNS, statusCounts } from '../row-mappers';
import { chunks, marks, type SqlStyle, sumPerChunk } from './sql-style';

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
}

type PortableOutbox = Omit<OutboxSql, 'claim' | 'lockKeySlots' | 'fillKeyLockSlots'>;

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
          params.push(r.id, r.type, r.payload, r.headers, r.partitionKey, delayOf(r));
          return `(${marks(style, i, 5)}, 'pending', 0, ${o.plusMs(mark(i + 5))}, ${now})`;
        });
        await exec(
          `INSERT INTO ${T} (id, type, payload, headers, partition_key, status, attempts, next_attempt_at, created_at)
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
                lease_owner = NULL, locked_until = NULL
          WHERE seq = ${mark(3)} AND lease_owner = ${mark(4)} AND status = 'pending'`,
        [p.error, Math.max(0, Math.floor(p.retryInMs)), p.dead ? 1 : 0, o.seq(p.seq), p.owner],
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
    async countByStatus(exec) {
      const { rows } = await exec(`SELECT status, COUNT(*) AS n FROM ${T} GROUP BY status`);
      return statusCounts(rows);
    },
  };
}
