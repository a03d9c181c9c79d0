import type { InboxSql } from '../contracts/inbox.contract';
import type { QuotedTables } from '../dialect';
import { mapInboxRow, settledClaim } from '../row-mappers';
import { compact, DUPLICATE_KEY, isMssqlRetryable } from './mssql.helpers';

/**
 * SQL Server (and Babelfish). Times on the database clock (SYSUTCDATETIME(), DATETIME2(3), UTC).
 *
 * The claim is one batch (one round trip, also for a duplicate) in the caller's transaction. A
 * plain INSERT takes an exclusive lock on the key of the primary key (consumer, message_id); a
 * concurrent INSERT of the same id waits on that lock (no LOCK_TIMEOUT is set: the session
 * default -1 waits) and then succeeds (the first rolled back) or fails with 2601/2627 (the first
 * committed), which TRY/CATCH turns into a look at the committed record. A record of failed
 * attempts (`retrying`) is taken over by an UPDATE whose predicate re-checks the status after any
 * lock wait. Under XACT_ABORT OFF (the driver's default) a caught duplicate-key error leaves the
 * transaction committable; table variables are not rolled back with a failed statement, so the
 * CATCH blocks empty the OUTPUT INTO target before going on. No MERGE (concurrency pitfalls,
 * absent on Babelfish). Column references on the right of SET read the values before the update.
 */
export function mssqlInboxSql(t: QuotedTables): InboxSql {
  const T = t.inbox;
  const key = 'consumer = @0 AND message_id = @1';
  const bump = `UPDATE ${T}
       SET status = CASE WHEN attempts + 1 >= @3 THEN 'failed' ELSE 'retrying' END,
           processed_at = CASE WHEN attempts + 1 >= @3 THEN @now ELSE NULL END,
           last_error = @2, attempts = attempts + 1
    OUTPUT inserted.status, inserted.attempts INTO @out
     WHERE ${key} AND status = 'retrying';`;
  const sql = {
    claim: compact(
      `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
       DECLARE @taken TABLE (attempts INT);
       BEGIN TRY
         INSERT INTO ${T} (consumer, message_id, status, attempts, received_at, processed_at)
         OUTPUT inserted.attempts INTO @taken
         VALUES (@0, @1, 'processed', 1, @now, @now);
       END TRY
       BEGIN CATCH
         IF ERROR_NUMBER() NOT IN (${DUPLICATE_KEY}) THROW;
         DELETE FROM @taken;
       END CATCH;
       IF NOT EXISTS (SELECT 1 FROM @taken)
         UPDATE ${T} SET status = 'processed', attempts = attempts + 1, processed_at = @now
         OUTPUT inserted.attempts INTO @taken
          WHERE ${key} AND status = 'retrying';
       IF EXISTS (SELECT 1 FROM @taken)
         SELECT 'claimed' AS outcome, NULL AS status, (SELECT TOP (1) attempts FROM @taken) AS attempts;
       ELSE
         SELECT 'settled' AS outcome, status, attempts FROM ${T} WHERE ${key};`,
    ),
    recordFailure: compact(
      `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
       DECLARE @out TABLE (status VARCHAR(16), attempts INT);
       ${bump}
       IF NOT EXISTS (SELECT 1 FROM @out)
       BEGIN
         BEGIN TRY
           INSERT INTO ${T} (consumer, message_id, status, attempts, received_at, processed_at, last_error)
           OUTPUT inserted.status, inserted.attempts INTO @out
           VALUES (@0, @1, CASE WHEN 1 >= @3 THEN 'failed' ELSE 'retrying' END, 1, @now,
                   CASE WHEN 1 >= @3 THEN @now ELSE NULL END, @2);
         END TRY
         BEGIN CATCH
           IF ERROR_NUMBER() NOT IN (${DUPLICATE_KEY}) THROW;
           DELETE FROM @out;
           ${bump}
         END CATCH;
       END;
       IF EXISTS (SELECT 1 FROM @out) SELECT TOP (1) status, attempts FROM @out;
       ELSE SELECT status, attempts FROM ${T} WHERE ${key};`,
    ),
    find: compact(
      `SELECT consumer, message_id, status, attempts, received_at, processed_at, last_error
         FROM ${T} WHERE ${key}`,
    ),
    remove: compact(`DELETE FROM ${T} WHERE ${key}; SELECT @@ROWCOUNT AS n;`),
    // @@ROWCOUNT right after the DELETE: the rows it deleted (0 or 1).
    removeUnprocessed: compact(
      `DELETE FROM ${T} WHERE ${key} AND status <> 'processed'; SELECT @@ROWCOUNT AS n;`,
    ),
  };
  return {
    // Deadlock victim (1205), lock request timeout (1222).
    isRetryable: isMssqlRetryable,
    async claim(exec, consumer, messageId) {
      const { rows } = await exec(sql.claim, [consumer, messageId]);
      const r = rows[0];
      if (r?.outcome === 'claimed') return { outcome: 'claimed', attempts: Number(r.attempts) };
      // No row: the record was deleted between the failed insert and the look; claim again.
      return settledClaim(r);
    },
    async recordFailure(exec, consumer, messageId, error, maxAttempts) {
      const { rows } = await exec(sql.recordFailure, [consumer, messageId, error, maxAttempts]);
      return { status: rows[0]?.status ?? 'retrying', attempts: Number(rows[0]?.attempts ?? 0) };
    },
    async find(exec, consumer, messageId) {
      const { rows } = await exec(sql.find, [consumer, messageId]);
      return rows[0] ? mapInboxRow(rows[0]) : undefined;
    },
    async remove(exec, consumer, messageId) {
      const { rows } = await exec(sql.remove, [consumer, messageId]);
      return Number(rows[0]?.n ?? 0);
    },
    async removeUnprocessed(exec, consumer, messageId) {
      const { rows } = await exec(sql.removeUnprocessed, [consumer, messageId]);
      return Number(rows[0]?.n ?? 0);
    },
  };
}
