import type { ConsoleSql } from '../contracts/console.contract';
import type { QuotedTables } from '../dialect';
import { consoleReads, INBOX_COLUMNS, inboxListWhere } from '../portable/console.sql';
import { Binder } from '../portable/sql-style';
import { mapInboxRow } from '../row-mappers';
import { compact, MSSQL_STYLE } from './mssql.helpers';

/**
 * SQL Server (and Babelfish) reads of the console. The figures (counts per consumer, messages
 * sent per minute) read WITH (NOLOCK), as the health read does: a figure may be a moment off, but
 * it never waits behind (or blocks) a relay's claim or a consumer's open transaction. The rows an
 * operator acts on (the inbox list, a key's times) are read under READ COMMITTED: they may wait
 * for a transaction in flight on the same rows, and then show what it committed. The minute of a
 * sent row is DATEDIFF in seconds / 60 (DATEDIFF(minute, …) counts minute boundaries crossed, not
 * minutes elapsed); @now is read once so the filter and the bucket agree.
 */
export function mssqlConsoleSql(t: QuotedTables): ConsoleSql {
  const sentPerMinute = compact(
    `DECLARE @now DATETIME2(3) = SYSUTCDATETIME();
     SELECT m AS minutes_ago, COUNT_BIG(*) AS sent
       FROM (SELECT DATEDIFF(second, sent_at, @now) / 60 AS m
               FROM ${t.outbox} WITH (NOLOCK)
              WHERE status = 'sent' AND sent_at >= DATEADD(second, -CAST(@0 / 1000 AS INT), @now)) AS s
      GROUP BY m`,
  );
  const counts = compact(
    `SELECT consumer, status, COUNT_BIG(*) AS n FROM ${t.inbox} WITH (NOLOCK)
      GROUP BY consumer, status ORDER BY consumer`,
  );
  const times = compact(
    `SELECT created_at, completed_at, expires_at FROM ${t.idempotency}
      WHERE scope = @0 AND idempotency_key = @1`,
  );
  return {
    async inboxList(exec, p) {
      const b = new Binder(MSSQL_STYLE);
      const where = inboxListWhere(p, b);
      const { rows } = await exec(
        compact(
          `SELECT TOP (${Math.max(1, Math.floor(p.limit))}) ${INBOX_COLUMNS} FROM ${t.inbox}
            ${where}
            ORDER BY received_at DESC`,
        ),
        b.values,
      );
      return rows.map(mapInboxRow);
    },
    ...consoleReads({ inboxCounts: counts, sentPerMinute, times }),
  };
}
