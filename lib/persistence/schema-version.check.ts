import type { DataSource } from 'typeorm';
import { getIdempotencyMigrations } from './migrations';
import type { MigrationNamingOptions } from './migrations';
import type { QuotedTables } from './dialects';
import { IdempotencyMisconfiguredError, isMisconfiguration } from './database-misconfigured';
import { COLUMNS_MISSING, SCHEMA_NOT_MIGRATED, TABLE_MISSING } from './persistence.messages';

/** The columns the library's statements use, per table (what the migrations create). */
const COLUMNS: Record<keyof QuotedTables, readonly string[]> = {
  idempotency: [
    'id',
    'scope',
    'idempotency_key',
    'request_hash',
    'state',
    'response_status',
    'response_headers',
    'response_body',
    'lease_token',
    'locked_until',
    'created_at',
    'completed_at',
    'expires_at',
  ],
  outbox: [
    'seq',
    'id',
    'type',
    'payload',
    'headers',
    'partition_key',
    'status',
    'attempts',
    'next_attempt_at',
    'last_error',
    'lease_owner',
    'locked_until',
    'created_at',
    'sent_at',
    'failures',
    'failed_at',
    'route',
  ],
  inbox: [
    'consumer',
    'message_id',
    'status',
    'attempts',
    'received_at',
    'processed_at',
    'last_error',
  ],
  outboxKeyLocks: ['slot', 'n'],
};

/**
 * Fails boot when the library's schema is missing or older than this version expects, with one
 * message naming what is missing and the fix. Two sources, so that every way of creating the
 * schema is covered:
 * - the tables themselves: each is probed with a `SELECT <its columns> … WHERE 1 = 0` (no row
 *   read, works on every database): a missing table or column is found whatever created the
 *   schema (TypeORM migrations, the SQL script, `synchronize`);
 * - TypeORM's migrations table, when it records at least one of the library's migrations (the
 *   app runs them with TypeORM): every later one it does not record is missing too (e.g. an
 *   index added by the newest migration, which the probe cannot see).
 * Apps with `migrationsRun: true` are checked after their migrations ran: TypeORM runs them while
 * the DataSource initializes, before any module's `onModuleInit`.
 */
export async function checkSchemaVersion(
  dataSource: DataSource,
  tables: QuotedTables,
  naming: MigrationNamingOptions,
): Promise<void> {
  const { problems, notApplied } = await schemaDifferences(dataSource, tables, naming);
  if (problems.length === 0 && notApplied.length === 0) return;
  throw new IdempotencyMisconfiguredError(SCHEMA_NOT_MIGRATED(problems, notApplied));
}

/** How the database differs from this version's schema (what `schema status` prints). */
export interface SchemaDifferences {
  /** Missing tables and columns. */
  problems: string[];
  /** The library's migrations TypeORM's migrations table does not record. */
  notApplied: string[];
}

/** The two checks of checkSchemaVersion, without throwing. */
export async function schemaDifferences(
  dataSource: DataSource,
  tables: QuotedTables,
  naming: MigrationNamingOptions,
): Promise<SchemaDifferences> {
  const problems: string[] = [];
  for (const kind of Object.keys(COLUMNS) as Array<keyof QuotedTables>) {
    const problem = await probe(dataSource, tables[kind], COLUMNS[kind]);
    if (problem) problems.push(problem);
  }
  const expected = getIdempotencyMigrations(naming).map((m) => m.name);
  const applied = await appliedMigrations(dataSource);
  const recordsLibrary = applied !== undefined && expected.some((name) => applied.has(name));
  const notApplied =
    recordsLibrary || problems.length > 0 ? expected.filter((name) => !applied?.has(name)) : [];
  return { problems, notApplied };
}

/** Undefined when the table has the columns; else what is wrong with it. */
async function probe(
  dataSource: DataSource,
  table: string,
  columns: readonly string[],
): Promise<string | undefined> {
  try {
    await dataSource.query(`SELECT 1 FROM ${table} WHERE 1 = 0`);
  } catch (e) {
    if (isMisconfiguration(e)) return TABLE_MISSING(table);
    throw e;
  }
  const list = columns.map((c) => dataSource.driver.escape(c)).join(', ');
  try {
    await dataSource.query(`SELECT ${list} FROM ${table} WHERE 1 = 0`);
  } catch (e) {
    if (isMisconfiguration(e)) return COLUMNS_MISSING(table, (e as Error).message);
    throw e;
  }
  return undefined;
}

/** Names recorded in TypeORM's migrations table, or undefined when there is no such table. */
async function appliedMigrations(dataSource: DataSource): Promise<Set<string> | undefined> {
  const { driver, options } = dataSource;
  const o = driver.options as { schema?: string; database?: string };
  const name = options.migrationsTableName || 'migrations';
  const table = driver.buildTableName(name, o.schema, o.database);
  const runner = dataSource.createQueryRunner();
  try {
    if (!(await runner.hasTable(table))) return undefined;
    const rows: Array<{ name: string }> = await dataSource
      .createQueryBuilder(runner)
      .select('m.name', 'name')
      .from(table, 'm')
      .getRawMany();
    return new Set(rows.map((r) => r.name));
  } finally {
    await runner.release();
  }
}
