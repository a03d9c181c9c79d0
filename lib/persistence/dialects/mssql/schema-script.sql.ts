import type { SchemaScriptWriter } from '../contracts/schema.contract';
import { quoteMssql as q } from './mssql.helpers';

const literal = (s: string) => `N'${s.replace(/'/g, "''")}'`;

/**
 * T-SQL for sqlcmd / SSMS: batches separated by `GO`, each migration one batch that runs only
 * when TypeORM's migrations table does not record it, in a transaction with XACT_ABORT ON (a
 * run-time error rolls the whole transaction back; a compile error runs nothing of the batch).
 * Inside the batch a CREATE INDEX names a table created earlier in it: tables are resolved when
 * the statement runs (deferred name resolution, which applies to table objects only), as the
 * hand-kept script before this one relied on; run here on Babelfish. Filtered indexes need the
 * SET options below when they are created.
 */
export const mssqlSchemaScript: SchemaScriptWriter = (migrations, o) => {
  const table = q(o.migrationsTable);
  const batches: string[] = [
    [
      'SET ANSI_NULLS ON;',
      'SET ANSI_PADDING ON;',
      'SET ANSI_WARNINGS ON;',
      'SET ARITHABORT ON;',
      'SET CONCAT_NULL_YIELDS_NULL ON;',
      'SET QUOTED_IDENTIFIER ON;',
      'SET NUMERIC_ROUNDABORT OFF;',
      'SET XACT_ABORT ON;',
    ].join('\n'),
  ];
  if (o.schema) {
    batches.push(
      `IF SCHEMA_ID(${literal(o.schema)}) IS NULL\n  EXEC (${literal(`CREATE SCHEMA ${q(o.schema)}`)});`,
    );
  }
  batches.push(
    [
      `-- TypeORM's migrations table (the columns TypeORM creates), recording what ran.`,
      `IF OBJECT_ID(${literal(table)}, N'U') IS NULL`,
      `  CREATE TABLE ${table} (`,
      `    [id] INT IDENTITY(1,1) NOT NULL,`,
      `    [timestamp] BIGINT NOT NULL,`,
      `    [name] VARCHAR(255) NOT NULL,`,
      `    CONSTRAINT ${q(`PK_${o.migrationsTable}`)} PRIMARY KEY ([id])`,
      `  );`,
    ].join('\n'),
  );
  for (const m of migrations) {
    batches.push(
      [
        `-- Migration ${m.name}`,
        `IF NOT EXISTS (SELECT 1 FROM ${table} WHERE [name] = ${literal(m.name)})`,
        'BEGIN',
        '  BEGIN TRANSACTION;',
        ...m.up.map((sql) => `${indent(sql, '  ')};`),
        `  INSERT INTO ${table} ([timestamp], [name]) VALUES (${m.timestamp}, ${literal(m.name)});`,
        '  COMMIT TRANSACTION;',
        'END;',
      ].join('\n'),
    );
  }
  return [...o.header.map((l) => `-- ${l}`.trimEnd()), '', batches.join('\nGO\n\n'), 'GO', ''].join(
    '\n',
  );
};

function indent(sql: string, by: string): string {
  return sql
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}
