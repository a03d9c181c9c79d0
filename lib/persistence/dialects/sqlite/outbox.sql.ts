import type { QuotedTables } from '../dialect';
import type { OutboxSql } from '../outbox-sql.interface';
import { bySeq, chunks, mapOutboxRow, OUTBOX_COLUMNS, statusCounts } from '../outbox-sql.interface';
import { sqliteNow } from './idempotency.sql';

/**
 * SQLite outbox. One writer: every statement and transaction is serialized in process by
 * SqliteSerializer, so the claim (ONE `UPDATE … WHERE seq IN (SELECT … LIMIT n) RETURNING`)
 * never meets another claim half-way, and it waits for a business transaction that is adding
 * rows to commit. Times are UTC text with milliseconds, compared as text.
 */
export function sqliteOutboxSql(t: QuotedTables): OutboxSql {
  const T = t.outbox;
  const now = sqliteNow();
  const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');
  return {
    async insert(exec, rows) {
      for (const part of chunks(rows, 500)) {
        const params: unknown[] = [];
        const values = part.map((r) => {
          params.push(r.id, r.type, r.payload, r.headers, r.partitionKey);
          return `(?, ?, ?, ?, ?, 'pending', 0, ${now}, ${now})`;
        });
        await exec(
          `INSERT INTO ${T} (id, type, payload, headers, partition_key, status, attempts, next_attempt_at, created_at)
           VALUES ${values.join(', ')}`,
          params,
        );
      }
    },
    async claim(exec, _inTransaction, p) {
      const ordered = p.ordered
        ? `AND (c.partition_key IS NULL OR NOT EXISTS (
                 SELECT 1 FROM ${T} AS o
                  WHERE o.partition_key = c.partition_key AND o.status = 'pending' AND o.seq < c.seq))`
        : '';
      const { rows } = await exec(
        `UPDATE ${T}
            SET lease_owner = ?, locked_until = ${sqliteNow('?')}
          WHERE seq IN (SELECT c.seq FROM ${T} AS c
                         WHERE c.status = 'pending' AND c.next_attempt_at <= ${now}
                           AND (c.locked_until IS NULL OR c.locked_until <= ${now})
                           ${ordered}
                         ORDER BY c.seq
                         LIMIT ${Math.max(1, Math.floor(p.limit))})
         RETURNING ${OUTBOX_COLUMNS}`,
        [p.owner, Math.floor(p.leaseMs)],
      );
      return rows.map(mapOutboxRow).sort(bySeq);
    },
    async markSent(exec, seqs, owner) {
      let n = 0;
      for (const part of chunks(seqs, 500)) {
        const { affected } = await exec(
          `UPDATE ${T} SET status = 'sent', sent_at = ${now}, locked_until = NULL
            WHERE seq IN (${marks(part.length)}) AND lease_owner = ? AND status = 'pending'`,
          [...part.map(Number), owner],
        );
        n += affected;
      }
      return n;
    },
    async markFailed(exec, p) {
      const { affected } = await exec(
        `UPDATE ${T}
            SET attempts = attempts + 1, last_error = ?, next_attempt_at = ${sqliteNow('?')},
                status = CASE WHEN ? = 1 THEN 'dead' ELSE 'pending' END,
                lease_owner = NULL, locked_until = NULL
          WHERE seq = ? AND lease_owner = ? AND status = 'pending'`,
        [p.error, Math.max(0, Math.floor(p.retryInMs)), p.dead ? 1 : 0, Number(p.seq), p.owner],
      );
      return affected === 1;
    },
    async release(exec, seqs, owner) {
      let n = 0;
      for (const part of chunks(seqs, 500)) {
        const { affected } = await exec(
          `UPDATE ${T} SET lease_owner = NULL, locked_until = NULL
            WHERE seq IN (${marks(part.length)}) AND lease_owner = ? AND status = 'pending'`,
          [...part.map(Number), owner],
        );
        n += affected;
      }
      return n;
    },
    async list(exec, p) {
      const where: string[] = [];
      const params: unknown[] = [];
      const add = (clause: string, value: unknown) => {
        where.push(clause);
        params.push(value);
      };
      if (p.status) add('status = ?', p.status);
      if (p.partitionKey !== undefined) add('partition_key = ?', p.partitionKey);
      if (p.afterSeq !== undefined) add('seq > ?', Number(p.afterSeq));
      const { rows } = await exec(
        `SELECT ${OUTBOX_COLUMNS} FROM ${T} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
          ORDER BY seq LIMIT ${Math.max(1, Math.floor(p.limit))}`,
        params,
      );
      return rows.map(mapOutboxRow);
    },
    async findByIds(exec, ids) {
      const out = [];
      for (const part of chunks(ids, 500)) {
        const { rows } = await exec(
          `SELECT ${OUTBOX_COLUMNS} FROM ${T} WHERE id IN (${marks(part.length)})`,
          [...part],
        );
        out.push(...rows.map(mapOutboxRow));
      }
      return out.sort(bySeq);
    },
    async requeue(exec, ids) {
      let n = 0;
      for (const part of chunks(ids, 500)) {
        const { affected } = await exec(
          `UPDATE ${T}
              SET status = 'pending', attempts = 0, next_attempt_at = ${now}, lease_owner = NULL, locked_until = NULL, sent_at = NULL
            WHERE id IN (${marks(part.length)}) AND status <> 'pending'`,
          [...part],
        );
        n += affected;
      }
      return n;
    },
    async purgeDead(exec, ids) {
      let n = 0;
      for (const part of chunks(ids, 500)) {
        const { affected } = await exec(
          `DELETE FROM ${T} WHERE id IN (${marks(part.length)}) AND status = 'dead'`,
          [...part],
        );
        n += affected;
      }
      return n;
    },
    async countByStatus(exec) {
      const { rows } = await exec(`SELECT status, COUNT(*) AS n FROM ${T} GROUP BY status`);
      return statusCounts(rows);
    },
  };
}
