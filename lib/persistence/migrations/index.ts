import type { MigrationInterface } from 'typeorm';
import type { TableNaming } from '../dialects';
import { DEFAULT_OPTIONS } from '../../idempotency-options.resolver';
import { defineMigration } from './migration-factory';

/** The schema and table names the library's migrations create, the same as `IdempotencyModule`'s `schema` and `tables`. */
export interface MigrationNamingOptions {
  schema?: string;
  tables?: Partial<TableNaming['tables']>;
}

/**
 * The library's TypeORM migrations, to register next to the app's own
 * (`migrations: [...getIdempotencyMigrations(), ...]`). Pass the same schema and table names as
 * to `IdempotencyModule.forRoot()`. DDL per database lives in `persistence/dialects/<db>/schema.sql.ts`.
 */
export function getIdempotencyMigrations(
  options: MigrationNamingOptions = {},
): Array<new () => MigrationInterface> {
  const naming: TableNaming = {
    schema: options.schema,
    tables: { ...DEFAULT_OPTIONS.tables, ...options.tables },
  };
  return [
    defineMigration('CreateIdempotencyRecords1763700000000', naming, (ddl, f) =>
      ddl.idempotency(f),
    ),
    defineMigration('CreateOutboxMessages1763700000200', naming, (ddl, f) => ddl.outbox(f)),
    defineMigration('CreateInboxMessages1763700000300', naming, (ddl, f) => ddl.inbox(f)),
    defineMigration('AddOutboxDeadIndex1763700000400', naming, (ddl, f) => ddl.outboxDeadIndex(f)),
    defineMigration('LowerCaseCheckNames1763700000500', naming, (ddl, f) => ddl.checkNames(f)),
    defineMigration('CreateOutboxKeyLocks1763800000100', naming, (ddl, f) => ddl.outboxKeyLocks(f)),
    defineMigration('AddOutboxFailureHistory1763800000200', naming, (ddl, f) =>
      ddl.outboxFailureHistory(f),
    ),
    defineMigration('AddOutboxRoute1763800000300', naming, (ddl, f) => ddl.outboxRoute(f)),
  ];
}
