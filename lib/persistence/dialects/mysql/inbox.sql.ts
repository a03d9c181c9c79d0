import type { InboxSql } from '../contracts/inbox.contract';
import type { QuotedTables } from '../dialect';
import { portableInboxReads } from '../portable/inbox.sql';
import { settledClaim } from '../row-mappers';
import { isMysqlRetryable, MYSQL_STYLE } from './mysql.helpers';

/**
 * MySQL 8 and MariaDB 10.6+ (InnoDB). Times on the database clock in UTC (UTC_TIMESTAMP(3)).
 *
 * The claim is an INSERT IGNORE on the primary key (consumer, message_id) in the caller's
 * transaction: against another transaction's uncommitted insert of the same id InnoDB waits
 * (innodb_lock_wait_timeout, default 50 s), then inserts (it rolled back) or skips the row (it
 * committed: 0 rows affected, a duplicate-key warning instead of an error that drivers and
 * TypeORM would log). IGNORE turns other errors into warnings too; every value inserted is a
 * constant or a string the service has checked against the column's length. A retrying record
 * is taken over by an UPDATE that re-checks the status on the newest version.
 * InnoDB may pick a deadlock victim when several transactions wait on one rolled-back insert:
 * `isRetryable` lets the service run the claim again. MySQL assigns SET columns left to right,
 * so `attempts` is assigned last where other columns read it.
 */
export function mysqlInboxSql(t: QuotedTables): InboxSql {
  const T = t.inbox;
  const settle = `SELECT status, attempts FROM ${T} WHERE consumer = ? AND message_id = ?`;
  const bump = `UPDATE ${T}
       SET status = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE 'retrying' END,
           processed_at = CASE WHEN attempts + 1 >= ? THEN UTC_TIMESTAMP(3) ELSE NULL END,
           last_error = ?, attempts = attempts + 1
     WHERE consumer = ? AND message_id = ? AND status = 'retrying'`;
  return {
    ...portableInboxReads(T, MYSQL_STYLE),
    // Lock wait timeout, deadlock victim: the claim may be retried.
    isRetryable: isMysqlRetryable,
    async claim(exec, consumer, messageId) {
      const inserted = await exec(
        `INSERT IGNORE INTO ${T} (consumer, message_id, status, attempts, received_at, processed_at)
         VALUES (?, ?, 'processed', 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
        [consumer, messageId],
      );
      if (inserted.affected === 1) return { outcome: 'claimed', attempts: 1 };
      // A locking read sees the newest committed version, not the transaction's snapshot. Shared,
      // like the lock the skipped duplicate already holds: concurrent duplicates of a processed
      // message never wait on each other (an UPDATE's exclusive lock here would deadlock them).
      const { rows } = await exec(`${settle} LOCK IN SHARE MODE`, [consumer, messageId]);
      if (rows[0]?.status !== 'retrying') return settledClaim(rows[0]);
      const { affected } = await exec(
        `UPDATE ${T} SET status = 'processed', processed_at = UTC_TIMESTAMP(3), attempts = attempts + 1
          WHERE consumer = ? AND message_id = ? AND status = 'retrying'`,
        [consumer, messageId],
      );
      if (affected === 1) return { outcome: 'claimed', attempts: Number(rows[0].attempts) + 1 };
      return settledClaim(
        (await exec(`${settle} LOCK IN SHARE MODE`, [consumer, messageId])).rows[0],
      );
    },
    async recordFailure(exec, consumer, messageId, error, maxAttempts) {
      const bumpParams = [maxAttempts, maxAttempts, error, consumer, messageId];
      // Insert the first failure; else (a record exists) bump it while it is retrying. Insert
      // first: an UPDATE of a missing key takes a gap lock under REPEATABLE READ, and two such
      // transactions inserting into the same gap deadlock each other (concurrent first failures
      // of different messages do exactly that). Insert-intention locks do not conflict.
      const last = 1 >= maxAttempts;
      const inserted = await exec(
        `INSERT IGNORE INTO ${T} (consumer, message_id, status, attempts, received_at, processed_at, last_error)
         VALUES (?, ?, ?, 1, UTC_TIMESTAMP(3), ${last ? 'UTC_TIMESTAMP(3)' : 'NULL'}, ?)`,
        [consumer, messageId, last ? 'failed' : 'retrying', error],
      );
      if (inserted.affected === 0) await exec(bump, bumpParams);
      const { rows } = await exec(`${settle} LOCK IN SHARE MODE`, [consumer, messageId]);
      return { status: rows[0]?.status ?? 'retrying', attempts: Number(rows[0]?.attempts ?? 0) };
    },
    async remove(exec, consumer, messageId) {
      const { affected } = await exec(`DELETE FROM ${T} WHERE consumer = ? AND message_id = ?`, [
        consumer,
        messageId,
      ]);
      return affected;
    },
    async removeUnprocessed(exec, consumer, messageId) {
      const { affected } = await exec(
        `DELETE FROM ${T} WHERE consumer = ? AND message_id = ? AND status <> 'processed'`,
        [consumer, messageId],
      );
      return affected;
    },
  };
}
