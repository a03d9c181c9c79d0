import type { Dialect, TableNaming } from '../dialect';
import { quotePostgres } from './postgres.helpers';
import { quotedTables, tableRefs } from '../dialect';
import { postgresCleanupSql } from './cleanup.sql';
import { portableHealthSql } from '../portable/health.sql';
import { postgresConditionalSql } from './conditional.sql';
import { postgresIdempotencySql } from './idempotency.sql';
import { postgresInboxSql } from './inbox.sql';
import { postgresOutboxSql } from './outbox.sql';
import { postgresSchema } from './schema.sql';

export function createPostgresDialect(naming: TableNaming): Dialect {
  const ref = tableRefs(naming, quotePostgres);
  const tables = quotedTables(ref);
  return {
    name: 'postgres',
    singleWriter: false,
    nonBlockingReads: true,
    tables,
    idempotency: postgresIdempotencySql(tables),
    conditional: postgresConditionalSql(),
    inbox: postgresInboxSql(tables),
    schema: postgresSchema(ref),
    cleanup: postgresCleanupSql(tables),
    health: portableHealthSql(
      tables.outbox,
      (c) => `CEIL(EXTRACT(EPOCH FROM (statement_timestamp() - ${c})) * 1000)::bigint`,
    ),
    outbox: postgresOutboxSql(tables),
  };
}
