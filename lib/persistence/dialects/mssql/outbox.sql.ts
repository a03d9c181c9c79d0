import { fillKeyLockSlots } from '../portable/key-lock-slots.sql';
import type { OutboxSql } from '../contracts/outbox.contract';
import type { QuotedTables } from '../dialect';
import type { SqlExecutor } from '../../sql-executor';
import {
  deadFilterWhere,
  type DeadFilterSpelling,
  delayOf,
  orderedClause,
  outboxCounts,
  routeClause,
} from '../portable/outbox.sql';
import { Binder, chunks, marks as placeholders, sumPerChunk } from '../portable/sql-style';
import { bySeq, mapOutboxRow, OUTBOX_COLUMNS } from '../row-mappers';
import { dateAddMs, MSSQL_STYLE, rowcount } from './mssql.helpers';

/**
 * SQL Server (and Babelfish) outbox. Times on the database clock (SYSUTCDATETIME(), DATETIME2(3)).
 *
 * The claim is ONE `UPDATE … OUTPUT … WHERE seq IN (SELECT TOP (n) seq … ORDER BY seq)`: no CTE,
 * no MERGE, so the same text runs on Babelfish. The inner read of the candidates carries
 * `WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)`:
 * - UPDLOCK: the candidates are U-locked while read, so two relays can never pick the same row;
 * - READPAST: rows another relay (or an uncommitted insert) holds are skipped, never waited for
 *   (for an UPDATE, READPAST applies to the read that finds the rows to update);
 * - ROWLOCK: row locks where SQL Server would take page locks, which READPAST could not skip;
 * - READCOMMITTEDLOCK: SQL Server refuses READPAST under READ_COMMITTED_SNAPSHOT at READ
 *   COMMITTED unless READCOMMITTEDLOCK is given (Azure SQL Database has RCSI on by default).
 * The outer WHERE repeats the "pending and not leased" test: harmless on SQL Server (the rows
 * are U-locked), and on Babelfish, which ignores the lock hints, it makes a concurrent second
 * claim of a row re-check the row's newest version (PostgreSQL semantics) and drop it.
 * The batch first sets READ COMMITTED: READPAST is refused (Msg 650) at any other level, and a
 * session's isolation level outlives the transaction that set it on a pooled connection.
 * OUTPUT goes INTO a table variable, then one SELECT returns it: a bare OUTPUT is refused on a
 * table with enabled triggers (Msg 334), and a DBA may add an audit trigger.
 *
 * Ordering: the NOT EXISTS on older pending rows of the same partition key reads through the
 * alias `o`, which has no READPAST: a locked head row is not skipped there (under locking READ
 * COMMITTED the read waits for the short claim/mark statement holding it; under RCSI it reads
 * the last committed version, still pending), so its successor is not claimed.
 */
export function mssqlOutboxSql(t: QuotedTables): OutboxSql {
  const T = t.outbox;
  const plus = (p: string, base: string) => dateAddMs(p, base);
  const marks = (from: number, n: number) => placeholders(MSSQL_STYLE, from, n);
  const claimedTable = `DECLARE @claimed TABLE (
      seq BIGINT NOT NULL, id VARCHAR(128) NOT NULL, type VARCHAR(255) NOT NULL, payload NVARCHAR(MAX) NOT NULL,
      headers NVARCHAR(MAX) NULL, partition_key NVARCHAR(255) NULL, status VARCHAR(16) NOT NULL, attempts INT NOT NULL,
      next_attempt_at DATETIME2(3) NULL, last_error NVARCHAR(2000) NULL, lease_owner VARCHAR(128) NULL,
      locked_until DATETIME2(3) NULL, created_at DATETIME2(3) NOT NULL, sent_at DATETIME2(3) NULL,
      failures NVARCHAR(MAX) NULL, failed_at DATETIME2(3) NULL, route VARCHAR(64) NULL)`;
  // One statement per chunk of up to 1,000 values (after the `fixed` parameters), each ending in
  // SELECT @@ROWCOUNT: the rows they changed, summed.
  const rowsPerChunk = (
    exec: SqlExecutor,
    values: readonly string[],
    fixed: unknown[],
    statement: (inList: string) => string,
  ) =>
    sumPerChunk(values, 1000, async (part) => {
      const { rows } = await exec(statement(marks(fixed.length, part.length)), [...fixed, ...part]);
      return rowcount(rows);
    });
  const inserted = OUTBOX_COLUMNS.split(', ')
    .map((c) => `inserted.${c}`)
    .join(', ');
  return {
    async insert(exec, rows) {
      // 6 parameters per row: 300 rows stay under the 2,100-parameter limit.
      for (const part of chunks(rows, 300)) {
        const params: unknown[] = [];
        const values = part.map((r) => {
          const i = params.length;
          params.push(r.id, r.type, r.payload, r.headers, r.partitionKey, r.route, delayOf(r));
          return `(@${i}, @${i + 1}, @${i + 2}, @${i + 3}, @${i + 4}, @${i + 5}, 'pending', 0, ${plus(`@${i + 6}`, '@now')}, @now)`;
        });
        await exec(
          `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
           INSERT INTO ${T} (id, type, payload, headers, partition_key, route, status, attempts, next_attempt_at, created_at)
           VALUES ${values.join(', ')};`,
          params,
        );
      }
    },
    fillKeyLockSlots: (exec) => fillKeyLockSlots(exec, t.outboxKeyLocks),
    async lockKeySlots(exec, slots) {
      if (!slots.length) return;
      // One UPDATE per slot, in slot order, in one batch: each takes the slot row's X lock to
      // the end of the transaction (a plain row lock on Babelfish, which ignores lock hints).
      const sorted = [...slots].sort((a, b) => a - b);
      await exec(
        sorted
          .map((_, i) => `UPDATE ${t.outboxKeyLocks} SET n = n + 1 WHERE slot = @${i};`)
          .join('\n'),
        sorted,
      );
    },
    async claim(exec, _inTransaction, p) {
      const ordered = orderedClause(T, p.ordered);
      const { rows } = await exec(
        `SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
         DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
         ${claimedTable};
         UPDATE ${T}
            SET lease_owner = @0, locked_until = ${plus('@1', '@now')}
         OUTPUT ${inserted} INTO @claimed
          WHERE seq IN (SELECT TOP (@2) c.seq
                          FROM ${T} AS c WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
                         WHERE c.status = 'pending' AND c.next_attempt_at <= @now
                           AND (c.locked_until IS NULL OR c.locked_until <= @now)
                           ${ordered}
                           ${routeClause(p.routes)}
                         ORDER BY c.seq)
            AND status = 'pending' AND (locked_until IS NULL OR locked_until <= @now);
         SELECT ${OUTBOX_COLUMNS} FROM @claimed;`,
        [p.owner, Math.floor(p.leaseMs), Math.floor(p.limit)],
      );
      return rows.map(mapOutboxRow).sort(bySeq);
    },
    markSent(exec, seqs, owner) {
      return rowsPerChunk(exec, seqs, [owner], (inList) => {
        return `UPDATE ${T} SET attempts = attempts + 1, status = 'sent', sent_at = SYSUTCDATETIME(), locked_until = NULL
            WHERE seq IN (${inList}) AND lease_owner = @0 AND status = 'pending';
           SELECT @@ROWCOUNT AS n;`;
      });
    },
    async markFailed(exec, p) {
      const { rows } = await exec(
        `UPDATE ${T}
            SET attempts = attempts + 1, last_error = @2, next_attempt_at = ${plus('@3', 'SYSUTCDATETIME()')},
                status = CASE WHEN @4 = 1 THEN 'dead' ELSE 'pending' END,
                failures = @5, failed_at = SYSUTCDATETIME(),
                lease_owner = NULL, locked_until = NULL
          WHERE seq = @0 AND lease_owner = @1 AND status = 'pending';
         SELECT @@ROWCOUNT AS n;`,
        [p.seq, p.owner, p.error, Math.max(0, Math.floor(p.retryInMs)), p.dead ? 1 : 0, p.failures],
      );
      return rowcount(rows) === 1;
    },
    release(exec, seqs, owner, error) {
      // The error (when given) is @1, the sequences follow: at most 1,002 parameters a statement.
      const withError = error !== undefined;
      return rowsPerChunk(exec, seqs, withError ? [owner, error] : [owner], (inList) => {
        return `UPDATE ${T} SET lease_owner = NULL, locked_until = NULL${withError ? ', last_error = @1' : ''}
            WHERE seq IN (${inList}) AND lease_owner = @0 AND status = 'pending';
           SELECT @@ROWCOUNT AS n;`;
      });
    },
    async list(exec, p) {
      const where: string[] = [];
      const params: unknown[] = [];
      const add = (clause: (at: string) => string, value: unknown) => {
        where.push(clause(`@${params.length}`));
        params.push(value);
      };
      if (p.status) add((at) => `status = ${at}`, p.status);
      if (p.partitionKey !== undefined) add((at) => `partition_key = ${at}`, p.partitionKey);
      if (p.afterSeq !== undefined) add((at) => `seq > ${at}`, p.afterSeq);
      const { rows } = await exec(
        `SELECT TOP (${Math.max(1, Math.floor(p.limit))}) ${OUTBOX_COLUMNS} FROM ${T}
          ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
          ORDER BY seq${p.newestFirst ? ' DESC' : ''}`,
        params,
      );
      return rows.map(mapOutboxRow);
    },
    async findByIds(exec, ids) {
      const out = [];
      for (const part of chunks(ids, 1000)) {
        const { rows } = await exec(
          `SELECT ${OUTBOX_COLUMNS} FROM ${T} WHERE id IN (${marks(0, part.length)})`,
          [...part],
        );
        out.push(...rows.map(mapOutboxRow));
      }
      return out.sort(bySeq);
    },
    requeue(exec, ids) {
      return rowsPerChunk(exec, ids, [], (inList) => {
        return `UPDATE ${T}
              SET status = 'pending', attempts = 0, next_attempt_at = SYSUTCDATETIME(), lease_owner = NULL,
                  locked_until = NULL, sent_at = NULL
            WHERE id IN (${inList}) AND status <> 'pending';
           SELECT @@ROWCOUNT AS n;`;
      });
    },
    purgeDead(exec, ids) {
      return rowsPerChunk(exec, ids, [], (inList) => {
        return `DELETE FROM ${T} WHERE id IN (${inList}) AND status = 'dead';
           SELECT @@ROWCOUNT AS n;`;
      });
    },
    ...outboxCounts(T, MSSQL_STYLE, DEAD_FILTER, 'COUNT_BIG(*)'),
    async deadSeqs(exec, filter, afterSeq, limit) {
      const b = new Binder(MSSQL_STYLE);
      const where = deadFilterWhere(filter, b, DEAD_FILTER);
      const after = afterSeq !== undefined ? ` AND seq > ${b.add(afterSeq)}` : '';
      const { rows } = await exec(
        `SELECT TOP (${Math.max(1, Math.floor(limit))}) seq FROM ${T} WHERE ${where}${after} ORDER BY seq`,
        b.values,
      );
      return rows.map((r) => String(r.seq));
    },
    requeueDeadSeqs(exec, seqs) {
      return rowsPerChunk(exec, seqs, [], (inList) => {
        return `UPDATE ${T}
              SET status = 'pending', attempts = 0, next_attempt_at = SYSUTCDATETIME(), lease_owner = NULL,
                  locked_until = NULL, sent_at = NULL
            WHERE seq IN (${inList}) AND status = 'dead';
           SELECT @@ROWCOUNT AS n;`;
      });
    },
    purgeDeadSeqs(exec, seqs) {
      return rowsPerChunk(exec, seqs, [], (inList) => {
        return `DELETE FROM ${T} WHERE seq IN (${inList}) AND status = 'dead';
           SELECT @@ROWCOUNT AS n;`;
      });
    },
  };
}

/**
 * The dead-letter filter on SQL Server: a time bound as ISO 8601 text (`YYYY-MM-DDTHH:MM:SS.fff`,
 * read the same whatever the session's DATEFORMAT or language) cast to DATETIME2(3); the error
 * text found with CHARINDEX on LOWER of both sides (no LIKE: no wildcard to escape).
 */
const DEAD_FILTER: DeadFilterSpelling = {
  time: (m) => `CAST(${m} AS DATETIME2(3))`,
  timeValue: (d) => d.toISOString().slice(0, 23),
  contains: (c, m) => `CHARINDEX(LOWER(${m}), LOWER(${c})) > 0`,
};
