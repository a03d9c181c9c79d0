import { portableAnswersSql } from '../portable/answers.sql';
import type { Dialect, TableNaming } from '../dialect';
import { assembleDialect } from '../dialect';
import { portableConsoleSql } from '../portable/console.sql';
import { portableHealthSql } from '../portable/health.sql';
import { mysqlCleanupSql } from './cleanup.sql';
import { mysqlConditionalSql } from './conditional.sql';
import { mysqlIdempotencySql } from './idempotency.sql';
import { mysqlInboxSql } from './inbox.sql';
import { MYSQL_NOW, quoteMysql, mysqlShiftMs, MYSQL_STYLE } from './mysql.helpers';
import { mysqlOutboxSql } from './outbox.sql';
import { mysqlSchema } from './schema.sql';

export function createMysqlDialect(naming: TableNaming, isMariaDb: boolean): Dialect {
  return assembleDialect(naming, {
    name: 'mysql',
    quote: quoteMysql,
    facets: (tables, ref) => ({
      idempotency: mysqlIdempotencySql(tables, isMariaDb),
      conditional: mysqlConditionalSql(),
      inbox: mysqlInboxSql(tables),
      schema: mysqlSchema(ref),
      cleanup: mysqlCleanupSql(tables),
      health: portableHealthSql(
        tables.outbox,
        (c) => `TIMESTAMPDIFF(MICROSECOND, ${c}, UTC_TIMESTAMP(3)) DIV 1000`,
      ),
      outbox: mysqlOutboxSql(tables),
      answers: portableAnswersSql(tables, MYSQL_STYLE, { now: MYSQL_NOW, returning: false }),
      console: portableConsoleSql(tables, MYSQL_STYLE, {
        minutesAgo: (c) => `TIMESTAMPDIFF(MINUTE, ${c}, UTC_TIMESTAMP(3))`,
        ago: (m) => mysqlShiftMs('DATE_SUB', m),
      }),
    }),
  });
}
