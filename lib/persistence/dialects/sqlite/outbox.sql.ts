import { fillKeyLockSlots } from '../portable/key-lock-slots.sql';
import type { OutboxSql } from '../contracts/outbox.contract';
import type { QuotedTables } from '../dialect';
import { orderedClause, portableOutboxSql, routeClause, utcText } from '../portable/outbox.sql';
import { bySeq, mapOutboxRow, OUTBOX_COLUMNS } from '../row-mappers';
import { SQLITE_STYLE, sqliteNow } from './sqlite.helpers';

/**
 * SQLite outbox. One writer: every statement and transaction is serialized in process by
 * SqliteSerializer, so the claim (ONE `UPDATE … WHERE seq IN (SELECT … LIMIT n) RETURNING`)
 * never meets another claim half-way, and it waits for a business transaction that is adding
 * rows to commit. Times are UTC text with milliseconds, compared as text.
 */
export function sqliteOutboxSql(t: QuotedTables): OutboxSql {
  const T = t.outbox;
  const now = sqliteNow();
  return {
    ...portableOutboxSql(T, {
      style: SQLITE_STYLE,
      now,
      plusMs: sqliteNow,
      chunk: 500,
      seq: Number,
      // Times are UTC text compared as text; lower() folds ASCII letters only.
      deadFilter: {
        time: (m) => m,
        timeValue: utcText,
        contains: (c, m) => `instr(lower(${c}), lower(${m})) > 0`,
      },
    }),
    fillKeyLockSlots: (exec) => fillKeyLockSlots(exec, t.outboxKeyLocks),
    async lockKeySlots() {
      // One writer: a transaction that writes holds the database until it ends.
    },
    async claim(exec, _inTransaction, p) {
      const { rows } = await exec(
        `UPDATE ${T}
            SET lease_owner = ?, locked_until = ${sqliteNow('?')}
          WHERE seq IN (SELECT c.seq FROM ${T} AS c
                         WHERE c.status = 'pending' AND c.next_attempt_at <= ${now}
                           AND (c.locked_until IS NULL OR c.locked_until <= ${now})
                           ${orderedClause(T, p.ordered)}
                           ${routeClause(p.routes)}
                         ORDER BY c.seq
                         LIMIT ${Math.max(1, Math.floor(p.limit))})
         RETURNING ${OUTBOX_COLUMNS}`,
        [p.owner, Math.floor(p.leaseMs)],
      );
      return rows.map(mapOutboxRow).sort(bySeq);
    },
  };
}
