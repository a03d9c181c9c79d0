import type { DialectName } from './dialect';
import type { SchemaScriptWriter } from './contracts/schema.contract';
import { mssqlSchemaScript } from './mssql/schema-script.sql';
import { mysqlSchemaScript } from './mysql/schema-script.sql';
import { postgresSchemaScript } from './postgres/schema-script.sql';
import { sqliteSchemaScript } from './sqlite/schema-script.sql';

/** The schema script's writer per database family. */
export const SCHEMA_SCRIPT_WRITERS: Record<DialectName, SchemaScriptWriter> = {
  mssql: mssqlSchemaScript,
  postgres: postgresSchemaScript,
  mysql: mysqlSchemaScript,
  sqlite: sqliteSchemaScript,
};
