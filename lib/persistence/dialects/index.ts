import type { DataSource } from 'typeorm';
import type { Dialect, DialectName, TableNaming } from './dialect';
import { createMssqlDialect } from './mssql';
import { createMysqlDialect } from './mysql';
import { createPostgresDialect } from './postgres';
import { createSqliteDialect } from './sqlite';

export * from './dialect';
export * from './contracts/answers.contract';
export * from './contracts/cleanup.contract';
export * from './contracts/conditional.contract';
export * from './contracts/console.contract';
export * from './contracts/health.contract';
export * from './contracts/idempotency.contract';
export * from './contracts/inbox.contract';
export * from './contracts/outbox.contract';
export * from './contracts/schema.contract';
export * from './row-mappers';

/** Maps a TypeORM driver type to the dialect family, or throws for an unsupported one. */
export function dialectNameOf(type: string): DialectName {
  switch (type) {
    case 'mssql':
      return 'mssql';
    case 'postgres':
      return 'postgres';
    case 'mysql':
    case 'mariadb':
      return 'mysql';
    case 'better-sqlite3':
    case 'sqlite':
      return 'sqlite';
    default:
      throw new Error(
        `nestjs-exactly-once supports mssql, postgres, mysql/mariadb and better-sqlite3/sqlite DataSources; got "${type}".`,
      );
  }
}

/** Builds the dialect for a connected DataSource (MySQL vs MariaDB is told by the server's version). */
export async function createDialect(dataSource: DataSource, naming: TableNaming): Promise<Dialect> {
  const name = dialectNameOf(dataSource.options.type);
  switch (name) {
    case 'mssql':
      return createMssqlDialect(naming);
    case 'postgres':
      return createPostgresDialect(naming);
    case 'mysql': {
      const rows: Array<{ v: string }> = await dataSource.query('SELECT VERSION() AS v');
      return createMysqlDialect(naming, /mariadb/i.test(rows[0]?.v ?? ''));
    }
    case 'sqlite':
      return createSqliteDialect(naming);
  }
}

/** Dialect for DDL only (migrations), where the server kind is known from the driver type. */
export function createDialectForDdl(type: string, naming: TableNaming): Dialect {
  const name = dialectNameOf(type);
  switch (name) {
    case 'mssql':
      return createMssqlDialect(naming);
    case 'postgres':
      return createPostgresDialect(naming);
    case 'mysql':
      return createMysqlDialect(naming, type === 'mariadb');
    case 'sqlite':
      return createSqliteDialect(naming);
  }
}
