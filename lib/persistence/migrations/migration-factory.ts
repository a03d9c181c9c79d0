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

/** Builds a TypeORM migration class whose DDL comes from the dialect module. */
export function defineMigration(
  className: string,
  naming: TableNaming,
  pick: (ddl: SchemaDdl, features: ServerFeatures) => SchemaSql,
): new () => MigrationInterface {
  const migration = class implements MigrationInterface {
    name = className;
    async up(queryRunner: QueryRunner): Promise<void> {
      const ddl = createDialectForDdl(queryRunner.connection.options.type, naming).schema;
      for (const sql of pick(ddl, await serverFeatures(queryRunner)).up)
        await queryRunner.query(sql);
    }
    async down(queryRunner: QueryRunner): Promise<void> {
      const ddl = createDialectForDdl(queryRunner.connection.options.type, naming).schema;
      for (const sql of pick(ddl, await serverFeatures(queryRunner)).down)
        await queryRunner.query(sql);
    }
  };
  Object.defineProperty(migration, 'name', { value: className });
  return migration;
}
