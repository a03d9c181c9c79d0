import { fillKeyLockSlots } from '../portable/key-lock-slots.sql';
import type { OutboxSql } from '../contracts/outbox.contract';
import type { QuotedTables } from '../dialect';
import { orderedClause, portableOutboxSql, routeClause, utcText } from '../portable/outbox.sql';
import { marks } from '../portable/sql-style';
import { bySeq, mapOutboxRow, OUTBOX_COLUMNS } from '../row-mappers';
import { MYSQL_NOW, MYSQL_STYLE, mysqlShiftMs } from './mysql.helpers';

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
  const now = MYSQL_NOW;
  return {
    ...portableOutboxSql(T, {
      style: MYSQL_STYLE,
      now,
      plusMs: (p) => mysqlShiftMs('DATE_ADD', p),
      chunk: 1000,
      seq: (s) => s,
      // UTC text (the columns hold UTC_TIMESTAMP values): no session time zone in between.
      deadFilter: {
        time: (m) => `CAST(${m} AS DATETIME(3))`,
        timeValue: utcText,
        contains: (c, m) => `LOCATE(LOWER(${m}), LOWER(${c})) > 0`,
      },
    }),
    fillKeyLockSlots: (exec) => fillKeyLockSlots(exec, t.outboxKeyLocks),
    async lockKeySlots(exec, slots) {
      if (!slots.length) return;
      // Record locks by primary key, taken in index (slot) order.
      await exec(
        `SELECT slot FROM ${t.outboxKeyLocks} WHERE slot IN (${marks(MYSQL_STYLE, 0, slots.length)}) ORDER BY slot FOR UPDATE`,
        [...slots],
      );
    },
    async claim(_exec, inTransaction, p) {
      const ordered = orderedClause(T, p.ordered);
      return inTransaction(async (exec) => {
        const { rows } = await exec(
          `SELECT ${OUTBOX_COLUMNS.split(', ')
            .map((c) => `c.${c}`)
            .join(', ')}
             FROM ${T} AS c
            WHERE c.status = 'pending' AND c.next_attempt_at <= ${now}
              AND (c.locked_until IS NULL OR c.locked_until <= ${now})
              ${ordered}
              ${routeClause(p.routes)}
            ORDER BY c.seq
            LIMIT ${Math.max(1, Math.floor(p.limit))}
            FOR UPDATE SKIP LOCKED`,
        );
        if (!rows.length) return [];
        const seqs = rows.map((r) => String(r.seq));
        await exec(
          `UPDATE ${T} SET lease_owner = ?, locked_until = ${mysqlShiftMs('DATE_ADD')} WHERE seq IN (${marks(MYSQL_STYLE, 0, seqs.length)})`,
          [p.owner, Math.floor(p.leaseMs), ...seqs],
        );
        return rows.map((r) => ({ ...mapOutboxRow(r), leaseOwner: p.owner })).sort(bySeq);
      });
    },
  };
}
