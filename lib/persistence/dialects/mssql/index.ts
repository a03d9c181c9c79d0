import type { Dialect, TableNaming } from '../dialect';
import { quoteMssql } from './mssql.helpers';
import { quotedTables, tableRefs } from '../dialect';
import { mssqlCleanupSql } from './cleanup.sql';
import { mssqlHealthSql } from './health.sql';
import { mssqlConditionalSql } from './conditional.sql';
import { mssqlIdempotencySql } from './idempotency.sql';
import { mssqlInboxSql } from './inbox.sql';
import { mssqlOutboxSql } from './outbox.sql';
import { mssqlSchema } from './schema.sql';

export function createMssqlDialect(naming: TableNaming): Dialect {
  const ref = tableRefs(naming, quoteMssql);
  const tables = quotedTables(ref);
  return {
    name: 'mssql',
    singleWriter: false,
    nonBlockingReads: false,
    tables,
    idempotency: mssqlIdempotencySql(tables),
    conditional: mssqlConditionalSql(),
    inbox: mssqlInboxSql(tables),
    schema: mssqlSchema(ref),
    cleanup: mssqlCleanupSql(tables),
    health: mssqlHealthSql(tables),
    outbox: mssqlOutboxSql(tables),
  };
}
