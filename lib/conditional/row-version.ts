import { Column } from 'typeorm';
import type { ColumnOptions, QueryRunner } from 'typeorm';
import { dialectNameOf } from '../persistence/dialects';
import { MSSQL_ALLOW_ROWVERSION_DDL } from '../persistence/dialects/mssql/conditional.sql';

/**
 * A SQL Server `rowversion` column as the entity's version (SQL Server only): the server sets a
 * new value on every insert and update, TypeORM never writes it, and ConditionalWriter gets the
 * new value back from the write statement itself (`OUTPUT inserted.<column>`). Read as an
 * 8-byte Buffer; its ETag is the 16 hex digits.
 */
export function RowVersionColumn(
  options: Omit<ColumnOptions, 'type' | 'insert' | 'update'> = {},
): PropertyDecorator {
  return Column({ ...options, type: 'rowversion', insert: false, update: false });
}

/**
 * Call at the start of a migration that creates a ROWVERSION column. On Babelfish (T-SQL on
 * PostgreSQL), which rejects the type unless `babelfishpg_tsql.escape_hatch_rowversion` is
 * 'ignore', it sets that escape hatch for the migration's session; on SQL Server and on other
 * databases it does nothing. Reads and writes of an existing rowversion column need nothing.
 */
export async function allowRowVersionColumns(queryRunner: QueryRunner): Promise<void> {
  if (dialectNameOf(String(queryRunner.connection.options.type)) !== 'mssql') return;
  await queryRunner.query(MSSQL_ALLOW_ROWVERSION_DDL);
}
