import { fillKeyLockSlots } from '../portable/key-lock-slots.sql';
import type { OutboxSql } from '../contracts/outbox.contract';
import type { QuotedTables } from '../dialect';
import { orderedClause, routeClause, portableOutboxSql } from '../portable/outbox.sql';
import { bySeq, mapOutboxRow, OUTBOX_COLUMNS } from '../row-mappers';
import { PG_NOW, pgShiftMs, POSTGRES_STYLE } from './postgres.helpers';

/**
 * PostgreSQL outbox. Times on the database clock (statement_timestamp()).
 *
 * The claim is ONE statement: a sub-select picks the oldest pending, due, unleased rows with
 * `FOR UPDATE OF c SKIP LOCKED` (rows another relay is claiming right now are skipped, never
 * waited for) and the UPDATE leases them by primary key (they stay locked by this statement
 * until it ends, so nothing can change them in between). The sub-select sits in `ARRAY(…)`, which PostgreSQL
 * runs once (an InitPlan): as a joined sub-query the planner may rescan it per outer row (a
 * nested loop on a table without statistics yet), and every rescan with SKIP LOCKED hands out
 * further rows, so one claim could take far more than `limit`. A row claimed and committed by another relay after
 * this statement's snapshot is re-checked on its newest version (the lease is then live) and
 * dropped, so no row is leased twice. The partial index on pending rows keeps the scan short
 * however many sent rows the table holds.
 *
 * Ordering: a row qualifies only when NOT EXISTS an older pending row of its partition key. That
 * sub-query is a plain MVCC read (the locking clause names `c` only): a head row that another
 * relay holds locked is still seen as pending, so its successor is not claimed, and it cannot
 * be skipped the way SKIP LOCKED skips it for the candidate scan.
 */
export function postgresOutboxSql(t: QuotedTables): OutboxSql {
  const T = t.outbox;
  const now = PG_NOW;
  const plusMs = (p: string) => pgShiftMs(p);
  const prefixed = OUTBOX_COLUMNS.split(', ')
    .map((c) => `t.${c}`)
    .join(', ');
  return {
    ...portableOutboxSql(T, {
      style: POSTGRES_STYLE,
      now,
      plusMs,
      chunk: 1000,
      seq: (x) => x,
      deadFilter: {
        time: (m) => `${m}::timestamptz`,
        timeValue: (d) => d.toISOString(),
        contains: (c, m) => `strpos(lower(${c}), lower(${m})) > 0`,
      },
    }),
    async claim(exec, _inTransaction, p) {
      const ordered = orderedClause(T, p.ordered);
      const { rows } = await exec(
        `UPDATE ${T} AS t
            SET lease_owner = $1, locked_until = ${plusMs('$2')}
          WHERE t.seq = ANY(ARRAY(
                  SELECT c.seq FROM ${T} AS c
                   WHERE c.status = 'pending' AND c.next_attempt_at <= ${now}
                     AND (c.locked_until IS NULL OR c.locked_until <= ${now})
                     ${ordered}
                     ${routeClause(p.routes)}
                   ORDER BY c.seq
                   LIMIT $3
                   FOR UPDATE OF c SKIP LOCKED))
         RETURNING ${prefixed}`,
        [p.owner, Math.floor(p.leaseMs), Math.floor(p.limit)],
      );
      return rows.map(mapOutboxRow).sort(bySeq);
    },
    fillKeyLockSlots: (exec) => fillKeyLockSlots(exec, t.outboxKeyLocks),
    async lockKeySlots(exec, slots) {
      if (!slots.length) return;
      // FOR UPDATE after ORDER BY: the rows are locked in slot order.
      await exec(
        `SELECT slot FROM ${t.outboxKeyLocks} WHERE slot = ANY($1::int[]) ORDER BY slot FOR UPDATE`,
        [[...slots]],
      );
    },
    async markSent(exec, seqs, owner) {
      if (!seqs.length) return 0;
      const { affected } = await exec(
        `UPDATE ${T} SET attempts = attempts + 1, status = 'sent', sent_at = ${now}, locked_until = NULL
          WHERE seq = ANY($1::bigint[]) AND lease_owner = $2 AND status = 'pending'`,
        [seqs, owner],
      );
      return affected;
    },
    async markFailed(exec, p) {
      const { affected } = await exec(
        `UPDATE ${T}
            SET attempts = attempts + 1, last_error = $3, next_attempt_at = ${plusMs('$4')},
                status = CASE WHEN $5::boolean THEN 'dead' ELSE 'pending' END,
                failures = $6, failed_at = ${now},
                lease_owner = NULL, locked_until = NULL
          WHERE seq = $1 AND lease_owner = $2 AND status = 'pending'`,
        [p.seq, p.owner, p.error, Math.max(0, Math.floor(p.retryInMs)), p.dead, p.failures],
      );
      return affected === 1;
    },
    async release(exec, seqs, owner, error) {
      if (!seqs.length) return 0;
      const withError = error !== undefined;
      const { affected } = await exec(
        `UPDATE ${T} SET lease_owner = NULL, locked_until = NULL${withError ? ', last_error = $3' : ''}
          WHERE seq = ANY($1::bigint[]) AND lease_owner = $2 AND status = 'pending'`,
        withError ? [seqs, owner, error] : [seqs, owner],
      );
      return affected;
    },
    async findByIds(exec, ids) {
      if (!ids.length) return [];
      const { rows } = await exec(
        `SELECT ${OUTBOX_COLUMNS} FROM ${T} WHERE id = ANY($1::text[]) ORDER BY seq`,
        [ids],
      );
      return rows.map(mapOutboxRow);
    },
    async requeue(exec, ids) {
      if (!ids.length) return 0;
      const { affected } = await exec(
        `UPDATE ${T}
            SET status = 'pending', attempts = 0, next_attempt_at = ${now}, lease_owner = NULL, locked_until = NULL, sent_at = NULL
          WHERE id = ANY($1::text[]) AND status <> 'pending'`,
        [ids],
      );
      return affected;
    },
    async purgeDead(exec, ids) {
      if (!ids.length) return 0;
      const { affected } = await exec(
        `DELETE FROM ${T} WHERE id = ANY($1::text[]) AND status = 'dead'`,
        [ids],
      );
      return affected;
    },
  };
}
