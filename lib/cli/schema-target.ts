import { existsSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DataSource } from 'typeorm';
import type { DataSourceOptions } from 'typeorm';
import type { MigrationNamingOptions } from '../persistence/migrations';
import { DEFAULT_OPTIONS } from '../idempotency-options.resolver';
import { CliFailure, CliUsageError } from './cli-command';
import {
  BAD_IDENTIFIER,
  BAD_TABLE_OPTION,
  CANNOT_CONNECT,
  MISSING_OPTION,
  SQLITE_FILE_MISSING,
} from './cli.messages';
import { dataSourceOptionsFromUrl, redactUrl } from './database-url';

/** Options every schema command takes: where the library's tables are. */
export const NAMING_OPTIONS = {
  schema: { type: 'string' },
  table: { type: 'string', multiple: true },
  'migrations-table': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

export const NAMING_USAGE = `  --schema NAME             schema of the library's tables (as IdempotencyModule's \`schema\`)
  --table KIND=NAME         a table name as IdempotencyModule's \`tables\` (KIND: idempotency,
                            outbox, inbox); repeat for each renamed table
  --migrations-table NAME   TypeORM's migrations table of your DataSource (default: migrations)`;

/** Options of the schema commands that connect to a database: the naming options and `--url`. */
export const URL_OPTIONS = {
  ...NAMING_OPTIONS,
  url: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** The usage lines of {@link URL_OPTIONS}. */
export const URL_USAGE = `  --url URL                 sqlite:<file>, postgres://…, mysql://…, mariadb://…, mssql://…
${NAMING_USAGE}`;

/** Parses the arguments of a command that takes {@link URL_OPTIONS}: the URL and the naming. */
export function parseUrlArgs(args: string[]): { url: string | undefined; naming: SchemaNaming } {
  const values = parseCommandArgs((c) => parseArgs({ args, options: URL_OPTIONS, ...c }).values);
  return { url: values.url, naming: namingFrom(values) };
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Parses a command's arguments (strict: unknown options and stray words are usage errors). */
export function parseCommandArgs<T>(
  parse: (config: { strict: true; allowPositionals: false }) => T,
): T {
  try {
    return parse({ strict: true, allowPositionals: false });
  } catch (e) {
    throw new CliUsageError((e as Error).message);
  }
}

export interface SchemaNaming extends MigrationNamingOptions {
  migrationsTable: string;
}

/** The naming options of a parsed command line. */
export function namingFrom(values: {
  schema?: string;
  table?: string[];
  'migrations-table'?: string;
}): SchemaNaming {
  const tables: Record<string, string> = {};
  for (const entry of values.table ?? []) {
    const m = /^(idempotency|outbox|inbox)=(.+)$/.exec(entry);
    if (!m) throw new CliUsageError(BAD_TABLE_OPTION(entry));
    tables[m[1]] = identifier('--table', m[2]);
  }
  return {
    schema: values.schema === undefined ? undefined : identifier('--schema', values.schema),
    tables,
    migrationsTable: identifier('--migrations-table', values['migrations-table'] ?? 'migrations'),
  };
}

/** The library's table names after the options (defaults filled in). */
export function tableNames(naming: SchemaNaming) {
  return { ...DEFAULT_OPTIONS.tables, ...naming.tables };
}

function identifier(option: string, value: string): string {
  if (!IDENTIFIER.test(value)) throw new CliUsageError(BAD_IDENTIFIER(option, value));
  return value;
}

/** Connects to `--url`: a bad URL is a usage error, a failed connection a failure (both exit 2). */
export async function connect(
  url: string | undefined,
  extra:
    Partial<DataSourceOptions> | ((options: DataSourceOptions) => Partial<DataSourceOptions>) = {},
): Promise<DataSource> {
  if (!url) throw new CliUsageError(MISSING_OPTION('--url'));
  let options: DataSourceOptions;
  try {
    options = dataSourceOptionsFromUrl(url, '--url');
  } catch (e) {
    throw new CliUsageError((e as Error).message);
  }
  if (options.type === 'better-sqlite3' && options.database !== ':memory:') {
    if (!existsSync(options.database)) {
      throw new CliUsageError(SQLITE_FILE_MISSING(options.database));
    }
  }
  const more = typeof extra === 'function' ? extra(options) : extra;
  const dataSource = new DataSource({ ...options, ...more, logging: false } as DataSourceOptions);
  try {
    await dataSource.initialize();
  } catch (e) {
    throw new CliFailure(CANNOT_CONNECT(redactUrl(url), (e as Error).message));
  }
  return dataSource;
}
