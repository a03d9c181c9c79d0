import type { Dialect, TableNaming } from '../dialect';
import { quoteSqlite } from './sqlite.helpers';
import { quotedTables, tableRefs } from '../dialect';
import { sqliteCleanupSql } from './cleanup.sql';
import { portableHealthSql } from '../portable/health.sql';
import { sqliteConditionalSql } from './conditional.sql';
import { sqliteIdempotencySql } from './idempotency.sql';
import { sqliteInboxSql } from './inbox.sql';
import { sqliteOutboxSql } from './outbox.sql';
import { sqliteSchema } from './schema.sql';

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
    health: portableHealthSql(
      tables.outbox,
      (c) => `CAST((julianday('now') - julianday(${c})) * 86400000 AS INTEGER)`,
    ),
    outbox: sqliteOutboxSql(tables),
  };
}
