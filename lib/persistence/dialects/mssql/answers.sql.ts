import type { AnswersSql } from '../contracts/answers.contract';
import type { QuotedTables } from '../dialect';
import { ANSWER_COLUMNS, mapAnswerRow, rewriteStatement } from '../portable/answers.sql';
import { compact, MSSQL_STYLE, rowcount } from './mssql.helpers';

/**
 * The re-encryption job's statements on SQL Server: the page reads with
 * `WITH (READPAST, READCOMMITTEDLOCK)`, so a row an in-flight request holds is skipped, never
 * waited for (READCOMMITTEDLOCK: SQL Server refuses READPAST under READ_COMMITTED_SNAPSHOT
 * without it); the compare-and-set rewrite reports its row count with `@@ROWCOUNT`.
 */
export function mssqlAnswersSql(t: QuotedTables): AnswersSql {
  return {
    async page(exec, afterId, limit) {
      const { rows } = await exec(
        compact(`SELECT TOP (${Math.max(1, Math.floor(limit))}) ${ANSWER_COLUMNS}
          FROM ${t.idempotency} WITH (READPAST, READCOMMITTEDLOCK)
          WHERE state = 'completed' AND expires_at > SYSUTCDATETIME() AND id > CAST(@0 AS BIGINT)
          ORDER BY id`),
        [afterId ?? '0'],
      );
      return rows.map(mapAnswerRow);
    },
    async rewrite(exec, row, headers, body) {
      const { sql, params } = rewriteStatement(t.idempotency, MSSQL_STYLE, row, headers, body);
      const { rows } = await exec(`${sql}; SELECT @@ROWCOUNT AS n;`, params);
      return rowcount(rows) === 1;
    },
  };
}
