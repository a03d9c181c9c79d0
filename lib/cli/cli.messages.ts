export const UNSUPPORTED_URL = (label: string, url: string) =>
  `${label}: unsupported database URL "${url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@')}" ` +
  '(use sqlite:<file>, postgres://user:pass@host:5432/db, mysql://… or mariadb://…, mssql://user:pass@host:1433/db)';

export const UNKNOWN_COMMAND = (given: string, names: string[]) =>
  `unknown command "${given}"; commands: ${names.join(', ')} (--help for usage)`;

export const UNKNOWN_DIALECT = (given: string) =>
  `--dialect: unknown database "${given}" (use mssql, postgres, mysql or sqlite)`;

export const MISSING_OPTION = (option: string) => `${option} is required`;

export const BAD_TABLE_OPTION = (given: string) =>
  `--table: "${given}" is not <kind>=<name> with kind idempotency, outbox or inbox`;

export const BAD_IDENTIFIER = (option: string, given: string) =>
  `${option}: "${given}" is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, at most 128 characters)`;

export const SQLITE_FILE_MISSING = (file: string) =>
  `--url: the SQLite file ${file} does not exist`;

export const CANNOT_CONNECT = (url: string, error: string) => `cannot connect to ${url}: ${error}`;

export const SCHEMA_CURRENT = (dialect: string) =>
  `schema: the ${dialect} database is at this version's schema (every table, column and migration of nestjs-exactly-once).`;

export const SCHEMA_DIFFERS = (lines: string[]) =>
  `schema: the database is NOT at this version's schema:\n${lines.map((l) => `  - ${l}`).join('\n')}\n` +
  'Apply it with `nestjs-exactly-once schema migrate --url …`, or review and run `nestjs-exactly-once schema sql --dialect …`.';

export const MIGRATIONS_APPLIED = (names: string[]) =>
  names.length
    ? `schema: applied ${names.length} migration(s): ${names.join(', ')}`
    : 'schema: nothing to apply, every migration is recorded as applied';
