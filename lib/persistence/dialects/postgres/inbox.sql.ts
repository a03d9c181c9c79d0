import type { InboxSql } from '../contracts/inbox.contract';
import type { QuotedTables } from '../dialect';
import { portableInboxReads, returningInboxRemove } from '../portable/inbox.sql';
import { settledClaim } from '../row-mappers';
import { isPostgresRetryable, POSTGRES_STYLE } from './postgres.helpers';

/**
 * PostgreSQL. Times on the database clock (statement_timestamp()).
 *
 * The claim is ONE upsert in the caller's transaction: INSERT … ON CONFLICT (consumer,
 * message_id) DO UPDATE … WHERE status = 'retrying'. Against another transaction's uncommitted
 * insert of the same id, PostgreSQL waits for that transaction to end, then inserts (it rolled
 * back) or sees the committed row; against a locked existing row it waits for the row lock and
 * re-evaluates the WHERE on the newest version. No row returned: a committed record settles the
 * message (processed or failed), read by a second statement in a new snapshot. (Folding that read
 * into the upsert as a CTE saves the duplicate a round trip but triples the planning cost of
 * every fresh claim, the common case.) Both statements run as named prepared statements, so
 * PostgreSQL parses and plans them once per connection.
 */
export function postgresInboxSql(t: QuotedTables): InboxSql {
  const T = t.inbox;
  const settle = `SELECT status, attempts FROM ${T} WHERE consumer = $1 AND message_id = $2`;
  return {
    ...portableInboxReads(T, POSTGRES_STYLE),
    ...returningInboxRemove(T, POSTGRES_STYLE),
    isRetryable: isPostgresRetryable,
    async claim(exec, consumer, messageId) {
      const { rows } = await exec(
        `INSERT INTO ${T} AS i (consumer, message_id, status, attempts, received_at, processed_at)
         VALUES ($1, $2, 'processed', 1, statement_timestamp(), statement_timestamp())
         ON CONFLICT (consumer, message_id) DO UPDATE
            SET status = 'processed', attempts = i.attempts + 1, processed_at = statement_timestamp()
          WHERE i.status = 'retrying'
         RETURNING attempts`,
        [consumer, messageId],
        { prepare: true },
      );
      if (rows[0]) return { outcome: 'claimed', attempts: Number(rows[0].attempts) };
      return settledClaim((await exec(settle, [consumer, messageId], { prepare: true })).rows[0]);
    },
    async recordFailure(exec, consumer, messageId, error, maxAttempts) {
      const { rows } = await exec(
        `INSERT INTO ${T} AS i (consumer, message_id, status, attempts, received_at, processed_at, last_error)
         VALUES ($1, $2, CASE WHEN 1 >= $4 THEN 'failed' ELSE 'retrying' END, 1, statement_timestamp(),
                 CASE WHEN 1 >= $4 THEN statement_timestamp() END, $3)
         ON CONFLICT (consumer, message_id) DO UPDATE
            SET status = CASE WHEN i.attempts + 1 >= $4 THEN 'failed' ELSE 'retrying' END,
                processed_at = CASE WHEN i.attempts + 1 >= $4 THEN statement_timestamp() END,
                last_error = $3, attempts = i.attempts + 1
          WHERE i.status = 'retrying'
         RETURNING status, attempts`,
        [consumer, messageId, error, maxAttempts],
      );
      const r = rows[0] ?? (await exec(settle, [consumer, messageId])).rows[0];
      return { status: r?.status ?? 'retrying', attempts: Number(r?.attempts ?? 0) };
    },
  };
}
