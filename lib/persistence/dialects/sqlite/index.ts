import { portableAnswersSql } from '../portable/answers.sql';
import type { Dialect, TableNaming } from '../dialect';
import { assembleDialect } from '../dialect';
import { portableConsoleSql } from '../portable/console.sql';
import { portableHealthSql } from '../portable/health.sql';
import { sqliteCleanupSql } from './cleanup.sql';
import { sqliteConditionalSql } from './conditional.sql';
import { sqliteIdempotencySql } from './idempotency.sql';
import { sqliteInboxSql } from './inbox.sql';
import { sqliteOutboxSql } from './outbox.sql';
import { sqliteSchema } from './schema.sql';
import { quoteSqlite, sqliteAgo, sqliteNow, SQLITE_STYLE } from './sqlite.helpers';

export function createSqliteDialect(naming: TableNaming): Dialect {
  return assembleDialect(naming, {
    name: 'sqlite',
    quote: quoteSqlite,
    useSchema: false,
    singleWriter: true,
    facets: (tables, ref) => ({
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
      answers: portableAnswersSql(tables, SQLITE_STYLE, { now: sqliteNow(), returning: true }),
      console: portableConsoleSql(tables, SQLITE_STYLE, {
        minutesAgo: (c) => `CAST((julianday('now') - julianday(${c})) * 1440 AS INTEGER)`,
        ago: (m) => sqliteAgo(m),
      }),
    }),
  });
}
