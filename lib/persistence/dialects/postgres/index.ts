import { portableAnswersSql } from '../portable/answers.sql';
import type { Dialect, TableNaming } from '../dialect';
import { assembleDialect } from '../dialect';
import { portableConsoleSql } from '../portable/console.sql';
import { portableHealthSql } from '../portable/health.sql';
import { postgresCleanupSql } from './cleanup.sql';
import { postgresConditionalSql } from './conditional.sql';
import { postgresIdempotencySql } from './idempotency.sql';
import { postgresInboxSql } from './inbox.sql';
import { postgresOutboxSql } from './outbox.sql';
import { PG_NOW, quotePostgres, pgShiftMs, POSTGRES_STYLE } from './postgres.helpers';
import { postgresSchema } from './schema.sql';

export function createPostgresDialect(naming: TableNaming): Dialect {
  return assembleDialect(naming, {
    name: 'postgres',
    quote: quotePostgres,
    facets: (tables, ref) => ({
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
      answers: portableAnswersSql(tables, POSTGRES_STYLE, { now: PG_NOW, returning: true }),
      console: portableConsoleSql(tables, POSTGRES_STYLE, {
        minutesAgo: (c) => `FLOOR(EXTRACT(EPOCH FROM (statement_timestamp() - ${c})) / 60)::int`,
        ago: (m) => pgShiftMs(m, '-'),
      }),
    }),
  });
}
