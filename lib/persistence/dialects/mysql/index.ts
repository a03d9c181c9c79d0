import type { Dialect, TableNaming } from '../dialect';
import { quoteMysql } from './mysql.helpers';
import { quotedTables, tableRefs } from '../dialect';
import { mysqlCleanupSql } from './cleanup.sql';
import { portableHealthSql } from '../portable/health.sql';
import { mysqlConditionalSql } from './conditional.sql';
import { mysqlIdempotencySql } from './idempotency.sql';
import { mysqlInboxSql } from './inbox.sql';
import { mysqlOutboxSql } from './outbox.sql';
import { mysqlSchema } from './schema.sql';

export function createMysqlDialect(naming: TableNaming, isMariaDb: boolean): Dialect {
  const ref = tableRefs(naming, quoteMysql);
  const tables = quotedTables(ref);
  return {
    name: 'mysql',
    singleWriter: false,
    nonBlockingReads: true,
    tables,
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
  };
}
