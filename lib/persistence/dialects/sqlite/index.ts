import type { Dialect, TableNaming } from '../dialect';
import { quotedTables, tableRefs } from '../dialect';
import { sqliteCleanupSql } from './cleanup.sql';
import { sqliteHealthSql } from './health.sql';
import { sqliteConditionalSql } from './conditional.sql';
import { sqliteIdempotencySql } from './idempotency.sql';
import { sqliteInboxSql } from './inbox.sql';
import { sqliteOutboxSql } from './outbox.sql';
import { sqliteSchema } from './schema.sql';

export const quoteSqlite = (id: string) => `"${id.replace(/"/g, '""')}"`;

export function createSqliteDialect(naming: TableNaming): Dialect {
  const ref = tableRefs(naming, quoteSqlite, false);
  const tables = quotedTables(ref);
  return {
    name: 'sqlite',
    singleWriter: true,
    nonBlockingReads: true,
    tables,
    idempotency: sqliteIdempotencySql(tables),
    conditional: sqliteConditionalSql(),
    inbox: sqliteInboxSql(tables),
    schema: sqliteSchema(ref),
    cleanup: sqliteCleanupSql(tables),
    health: sqliteHealthSql(tables),
    outbox: sqliteOutboxSql(tables),
  };
}
