import { mssqlAnswersSql } from './answers.sql';
import type { Dialect, TableNaming } from '../dialect';
import { assembleDialect } from '../dialect';
import { mssqlCleanupSql } from './cleanup.sql';
import { mssqlConditionalSql } from './conditional.sql';
import { mssqlConsoleSql } from './console.sql';
import { mssqlHealthSql } from './health.sql';
import { mssqlIdempotencySql } from './idempotency.sql';
import { mssqlInboxSql } from './inbox.sql';
import { quoteMssql } from './mssql.helpers';
import { mssqlOutboxSql } from './outbox.sql';
import { mssqlSchema } from './schema.sql';

export function createMssqlDialect(naming: TableNaming): Dialect {
  return assembleDialect(naming, {
    name: 'mssql',
    quote: quoteMssql,
    nonBlockingReads: false,
    facets: (tables, ref) => ({
      idempotency: mssqlIdempotencySql(tables),
      conditional: mssqlConditionalSql(),
      inbox: mssqlInboxSql(tables),
      schema: mssqlSchema(ref),
      cleanup: mssqlCleanupSql(tables),
      health: mssqlHealthSql(tables),
      outbox: mssqlOutboxSql(tables),
      console: mssqlConsoleSql(tables),
      answers: mssqlAnswersSql(tables),
    }),
  });
}
