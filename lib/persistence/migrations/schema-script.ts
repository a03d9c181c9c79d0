import type { DialectName, ScriptMigration, ServerFeatures } from '../dialects';
import { SCHEMA_SCRIPT_WRITERS } from '../dialects/schema-scripts';
import { getIdempotencyMigrations } from './index';
import type { MigrationNamingOptions } from './index';
import { migrationDdlOf } from './migration-factory';

/** The TypeORM driver type whose DDL a dialect family's script prints. */
const DRIVER_TYPE: Record<DialectName, string> = {
  mssql: 'mssql',
  postgres: 'postgres',
  mysql: 'mysql',
  sqlite: 'better-sqlite3',
};

export interface SchemaScriptOptions extends MigrationNamingOptions {
  dialect: DialectName;
  /** TypeORM's migrations table of the app's DataSource (`migrationsTableName`); default `migrations`. */
  migrationsTable?: string;
  /**
   * SQL Server: OPTIMIZE_FOR_SEQUENTIAL_KEY on the clustered sequence keys (SQL Server 2019+ and
   * Azure SQL; the default). False for SQL Server 2016/2017 and Babelfish, which lack it.
   */
  sequentialKeyOption?: boolean;
  /** Text of the header comment (one string per line). */
  header?: string[];
}

/**
 * The library's migrations as statements: what each one runs on the given database family,
 * read from the migration classes themselves (getIdempotencyMigrations()), so a new migration
 * reaches the script and `schema status` with no second list to keep.
 */
export function scriptMigrations(
  options: Pick<SchemaScriptOptions, 'dialect' | 'schema' | 'tables' | 'sequentialKeyOption'>,
): ScriptMigration[] {
  const features: ServerFeatures =
    options.dialect === 'mssql' ? { sequentialKeyOption: options.sequentialKeyOption ?? true } : {};
  return getIdempotencyMigrations(options).map((migration) => {
    const ddl = migrationDdlOf(migration);
    if (!ddl) {
      throw new Error(
        `migration ${migration.name} was not built with defineMigration(): the schema script cannot read its statements`,
      );
    }
    const timestamp = Number(/(\d{13})$/.exec(migration.name)?.[1]);
    if (!Number.isFinite(timestamp)) {
      throw new Error(`migration ${migration.name} does not end with a 13-digit timestamp`);
    }
    const up = ddl(DRIVER_TYPE[options.dialect], features).up.map(tidy);
    return { name: migration.name, timestamp, up };
  });
}

/** The schema script of one database family: every migration, guarded and recorded. */
export function schemaScript(options: SchemaScriptOptions): string {
  return SCHEMA_SCRIPT_WRITERS[options.dialect](scriptMigrations(options), {
    schema: options.schema,
    migrationsTable: options.migrationsTable ?? 'migrations',
    header: options.header ?? [],
  });
}

/** A statement as printed: the first line trimmed, the others dedented to two spaces. */
function tidy(sql: string): string {
  const [first, ...rest] = sql.trim().split('\n');
  const lines = rest.map((l) => l.trimEnd());
  const body = lines.filter((l) => l.trim());
  const margin = Math.min(...body.map((l) => /^ */.exec(l)![0].length));
  return [first.trim(), ...lines.map((l) => (l.trim() ? l.slice(margin) : l))].join('\n');
}
