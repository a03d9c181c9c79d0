import type { MigrationInterface, QueryRunner } from 'typeorm';
import type { SchemaDdl, SchemaSql, ServerFeatures, TableNaming } from '../dialects';
import { createDialectForDdl } from '../dialects';

/** Reads what the DDL needs to know about the server (SQL Server version for OPTIMIZE_FOR_SEQUENTIAL_KEY). */
export async function serverFeatures(queryRunner: QueryRunner): Promise<ServerFeatures> {
  if (queryRunner.connection.options.type !== 'mssql') return {};
  const rows: Array<{ major: number | null; version: string }> = await queryRunner.query(
    `SELECT CAST(SERVERPROPERTY('ProductMajorVersion') AS INT) AS major, @@VERSION AS version`,
  );
  const major = Number(rows[0]?.major ?? 0);
  const babelfish = /babelfish/i.test(rows[0]?.version ?? '');
  // OPTIMIZE_FOR_SEQUENTIAL_KEY exists from SQL Server 2019 (15.x) and in Azure SQL.
  return { sequentialKeyOption: !babelfish && major >= 15 };
}

/**
 * Where a migration class built by defineMigration keeps its statements, so that the schema
 * script (`nestjs-exactly-once schema sql`) prints exactly what the migration runs.
 * @internal
 */
export const MIGRATION_DDL = Symbol('nestjs-exactly-once:migration-ddl');

/** The statements of a library migration for a database type (TypeORM's `type`). @internal */
export type MigrationDdl = (type: string, features: ServerFeatures) => SchemaSql;

/** Builds a TypeORM migration class whose DDL comes from the dialect module. */
export function defineMigration(
  className: string,
  naming: TableNaming,
  pick: (ddl: SchemaDdl, features: ServerFeatures) => SchemaSql,
): new () => MigrationInterface {
  const statements: MigrationDdl = (type, features) =>
    pick(createDialectForDdl(type, naming).schema, features);
  const migration = class implements MigrationInterface {
    name = className;
    async up(queryRunner: QueryRunner): Promise<void> {
      const { type } = queryRunner.connection.options;
      for (const sql of statements(type, await serverFeatures(queryRunner)).up) {
        await queryRunner.query(sql);
      }
    }
    async down(queryRunner: QueryRunner): Promise<void> {
      const { type } = queryRunner.connection.options;
      for (const sql of statements(type, await serverFeatures(queryRunner)).down) {
        await queryRunner.query(sql);
      }
    }
  };
  Object.defineProperty(migration, 'name', { value: className });
  Object.defineProperty(migration, MIGRATION_DDL, { value: statements });
  return migration;
}

/** The statements a library migration class runs, or undefined for a class not built here. @internal */
export function migrationDdlOf(migration: new () => MigrationInterface): MigrationDdl | undefined {
  return (migration as unknown as Record<symbol, MigrationDdl | undefined>)[MIGRATION_DDL];
}
