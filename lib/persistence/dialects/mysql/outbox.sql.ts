import type { QuotedTables } from '../dialect';
import type { OutboxSql } from '../outbox-sql.interface';
import { bySeq, chunks, mapOutboxRow, OUTBOX_COLUMNS, statusCounts } from '../outbox-sql.interface';

/**
 * MySQL 8 and MariaDB 10.6+ outbox. Times on the database clock in UTC (UTC_TIMESTAMP(3)).
 *
 * MySQL has no UPDATE … RETURNING and refuses a sub-select on the table being updated, so the
 * claim is a short READ COMMITTED transaction: `SELECT … ORDER BY seq LIMIT n FOR UPDATE SKIP
 * LOCKED` (rows another relay holds are skipped, never waited for; READ COMMITTED takes no gap
 * locks, so the claim never blocks the application's inserts), then an UPDATE of exactly those
 * rows by primary key, then COMMIT.
 *
 * Ordering: the NOT EXISTS sub-query on older rows of the same partition key is a consistent
 * (non-locking) read: InnoDB's locking clause applies to the outer table only unless the
 * sub-query has its own, so SKIP LOCKED cannot skip a locked head row there and let its
 * successor overtake it.
 */
export function mysqlOutboxSql(t: QuotedTables): OutboxSql {
  const T = t.outbox;
  const now = 'UTC_TIMESTAMP(3)';
  const plusMs = (p = '?') => `DATE_ADD(${now}, INTERVAL (${p}) * 1000 MICROSECOND)`;
  const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');
  return {
    async insert(exec, rows) {
      for (const part of chunks(rows, 1000)) {
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
    async claim(_exec, inTransaction, p) {
      const ordered = p.ordered
        ? `AND (c.partition_key IS NULL OR NOT EXISTS (
                 SELECT 1 FROM ${T} AS o
                  WHERE o.partition_key = c.partition_key AND o.status = 'pending' AND o.seq < c.seq))`
        : '';
      return inTransaction(async (exec) => {
        const { rows } = await exec(
          `SELECT ${OUTBOX_COLUMNS.split(', ')
            .map((c) => `c.${c}`)
            .join(', ')}
             FROM ${T} AS c
            WHERE c.status = 'pending' AND c.next_attempt_at <= ${now}
              AND (c.locked_until IS NULL OR c.locked_until <= ${now})
              ${ordered}
            ORDER BY c.seq
            LIMIT ${Math.max(1, Math.floor(p.limit))}
            FOR UPDATE SKIP LOCKED`,
        );
        if (!rows.length) return [];
        const seqs = rows.map((r) => String(r.seq));
        await exec(
          `UPDATE ${T} SET lease_owner = ?, locked_until = ${plusMs()} WHERE seq IN (${marks(seqs.length)})`,
          [p.owner, Math.floor(p.leaseMs), ...seqs],
        );
        return rows.map((r) => ({ ...mapOutboxRow(r), leaseOwner: p.owner })).sort(bySeq);
      });
    },
    async markSent(exec, seqs, owner) {
      let n = 0;
      for (const part of chunks(seqs, 1000)) {
        const { affected } = await exec(
          `UPDATE ${T} SET status = 'sent', sent_at = ${now}, locked_until = NULL
            WHERE seq IN (${marks(part.length)}) AND lease_owner = ? AND status = 'pending'`,
          [...part, owner],
        );
        n += affected;
      }
      return n;
    },
    async markFailed(exec, p) {
      const { affected } = await exec(
        `UPDATE ${T}
            SET attempts = attempts + 1, last_error = ?, next_attempt_at = ${plusMs()},
                status = CASE WHEN ? = 1 THEN 'dead' ELSE 'pending' END,
                lease_owner = NULL, locked_until = NULL
          WHERE seq = ? AND lease_owner = ? AND status = 'pending'`,
        [p.error, Math.max(0, Math.floor(p.retryInMs)), p.dead ? 1 : 0, p.seq, p.owner],
      );
      return affected === 1;
    },
    async release(exec, seqs, owner) {
      let n = 0;
      for (const part of chunks(seqs, 1000)) {
        const { affected } = await exec(
          `UPDATE ${T} SET lease_owner = NULL, locked_until = NULL
            WHERE seq IN (${marks(part.length)}) AND lease_owner = ? AND status = 'pending'`,
          [...part, owner],
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
      if (p.afterSeq !== undefined) add('seq > ?', p.afterSeq);
      const { rows } = await exec(
        `SELECT ${OUTBOX_COLUMNS} FROM ${T} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
          ORDER BY seq LIMIT ${Math.max(1, Math.floor(p.limit))}`,
        params,
      );
      return rows.map(mapOutboxRow);
    },
    async findByIds(exec, ids) {
      const out = [];
      for (const part of chunks(ids, 1000)) {
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
      for (const part of chunks(ids, 1000)) {
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
      for (const part of chunks(ids, 1000)) {
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
