import type { InboxSql } from '../contracts/inbox.contract';
import { mapInboxRow } from '../row-mappers';
import { marks, type SqlStyle } from './sql-style';

/**
 * Inbox statements that are the same text on PostgreSQL, MySQL/MariaDB and SQLite but for the
 * placeholders. `find` runs as a named prepared statement on PostgreSQL (ignored elsewhere).
 */
export function portableInboxReads(T: string, style: SqlStyle): Pick<InboxSql, 'find'> {
  const [consumer, messageId] = marks(style, 0, 2).split(', ');
  const find = `SELECT consumer, message_id, status, attempts, received_at, processed_at, last_error
           FROM ${T} WHERE consumer = ${consumer} AND message_id = ${messageId}`;
  return {
    async find(exec, c, m) {
      const { rows } = await exec(find, [c, m], { prepare: true });
      return rows[0] ? mapInboxRow(rows[0]) : undefined;
    },
  };
}

/** `remove` and `removeUnprocessed` on databases with `DELETE … RETURNING` (PostgreSQL, SQLite). */
export function returningInboxRemove(
  T: string,
  style: SqlStyle,
): Pick<InboxSql, 'remove' | 'removeUnprocessed'> {
  const sql = `DELETE FROM ${T} WHERE consumer = ${style.mark(0)} AND message_id = ${style.mark(1)} RETURNING 1 AS n`;
  const unprocessed = `DELETE FROM ${T} WHERE consumer = ${style.mark(0)} AND message_id = ${style.mark(1)} AND status <> 'processed' RETURNING 1 AS n`;
  return {
    async remove(exec, consumer, messageId) {
      const { rows } = await exec(sql, [consumer, messageId]);
      return rows.length;
    },
    async removeUnprocessed(exec, consumer, messageId) {
      const { rows } = await exec(unprocessed, [consumer, messageId]);
      return rows.length;
    },
  };
}
