import type { AnswersSql, StoredAnswerRow } from '../contracts/answers.contract';
import type { QuotedTables } from '../dialect';
import { buf, num, str } from '../row-mappers';
import { Binder, type SqlStyle } from './sql-style';

export const ANSWER_COLUMNS =
  'id, scope, idempotency_key, response_status, response_headers, response_body';

/** Maps a row of {@link ANSWER_COLUMNS}. */
export function mapAnswerRow(r: any): StoredAnswerRow {
  return {
    id: String(r.id),
    scope: str(r.scope),
    key: str(r.idempotency_key),
    status: num(r.response_status),
    headers:
      r.response_headers === null || r.response_headers === undefined
        ? null
        : str(r.response_headers),
    body: buf(r.response_body),
  };
}

/**
 * The compare-and-set of one record's answer: the new headers and body, where the record still
 * is the completed answer that was read (same status, headers and body; a sealed body carries a
 * random IV, so an answer written again in between never matches).
 */
export function rewriteStatement(
  table: string,
  style: SqlStyle,
  row: StoredAnswerRow,
  headers: string,
  body: Buffer,
): { sql: string; params: unknown[] } {
  const b = new Binder(style);
  const set = `response_headers = ${b.add(headers)}, response_body = ${b.add(body)}`;
  const where = [
    `id = ${b.add(row.id)}`,
    `state = 'completed'`,
    `response_status = ${b.add(row.status)}`,
    row.headers === null ? 'response_headers IS NULL' : `response_headers = ${b.add(row.headers)}`,
    row.body === null ? 'response_body IS NULL' : `response_body = ${b.add(row.body)}`,
  ];
  return { sql: `UPDATE ${table} SET ${set} WHERE ${where.join(' AND ')}`, params: b.values };
}

/**
 * The re-encryption job's statements on PostgreSQL, MySQL/MariaDB and SQLite (MVCC or
 * consistent non-locking reads: the page never waits on an in-flight request). `returning`:
 * the rewrite says it matched with `RETURNING id` (PostgreSQL, SQLite), else by affected rows.
 */
export function portableAnswersSql(
  t: QuotedTables,
  style: SqlStyle,
  o: { now: string; returning: boolean },
): AnswersSql {
  return {
    async page(exec, afterId, limit) {
      const { rows } = await exec(
        `SELECT ${ANSWER_COLUMNS} FROM ${t.idempotency}
          WHERE state = 'completed' AND expires_at > ${o.now} AND id > ${style.mark(0)}
          ORDER BY id LIMIT ${Math.max(1, Math.floor(limit))}`,
        [afterId ?? '0'],
      );
      return rows.map(mapAnswerRow);
    },
    async rewrite(exec, row, headers, body) {
      const { sql, params } = rewriteStatement(t.idempotency, style, row, headers, body);
      const r = await exec(o.returning ? `${sql} RETURNING id` : sql, params);
      return o.returning ? r.rows.length === 1 : r.affected === 1;
    },
  };
}
