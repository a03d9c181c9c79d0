import type { EntitySchemaColumnOptions } from 'typeorm';
import type { DialectName } from '../dialects';

/** Column shapes used by the library's tables, mapped to each database's native types. */
export function columnTypes(db: DialectName) {
  const c = (o: EntitySchemaColumnOptions): EntitySchemaColumnOptions => o;
  return {
    id: (): EntitySchemaColumnOptions =>
      c({ type: db === 'sqlite' ? 'integer' : 'bigint', primary: true, generated: 'increment' }),
    string: (length: number, nullable = false) =>
      c({ type: db === 'mssql' ? 'nvarchar' : 'varchar', length, nullable }),
    ascii: (length: number, nullable = false) => c({ type: 'varchar', length, nullable }),
    int: (nullable = false) => c({ type: db === 'sqlite' ? 'integer' : 'int', nullable }),
    binary: (length: number, nullable = false) =>
      c({
        type: db === 'postgres' ? 'bytea' : db === 'sqlite' ? 'blob' : 'varbinary',
        ...(db === 'mssql' || db === 'mysql' ? { length } : {}),
        nullable,
      }),
    blob: (nullable = true) =>
      c(
        db === 'mssql'
          ? { type: 'varbinary', length: 'MAX', nullable }
          : { type: db === 'postgres' ? 'bytea' : db === 'mysql' ? 'longblob' : 'blob', nullable },
      ),
    text: (nullable = true) =>
      c(
        db === 'mssql'
          ? { type: 'nvarchar', length: 'MAX', nullable }
          : { type: db === 'mysql' ? 'mediumtext' : 'text', nullable },
      ),
    time: (nullable = false) =>
      c(
        db === 'mssql'
          ? { type: 'datetime2', precision: 3, nullable }
          : db === 'postgres'
            ? { type: 'timestamptz', precision: 3, nullable }
            : db === 'mysql'
              ? { type: 'datetime', precision: 3, nullable }
              : { type: 'datetime', nullable },
      ),
  };
}
