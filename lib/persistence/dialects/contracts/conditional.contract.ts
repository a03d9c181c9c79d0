import type { SqlExecutor } from '../../sql-executor';

/**
 * How a versioned table keeps its version: `counter` is an integer the library increments in
 * the same statement; `rowversion` is a SQL Server ROWVERSION the server sets on every write.
 */
export type VersionKind = 'counter' | 'rowversion';

/** A version as stored: a counter (number) or the 8 bytes of a rowversion. */
export type VersionValue = number | Buffer;

/** A table with a version column, by its database names (unquoted: the dialect quotes them). */
export interface VersionedTableSql {
  schema?: string;
  table: string;
  keyColumns: string[];
  versionColumn: string;
  versionKind: VersionKind;
}

/** One column (database name, unquoted) and its value, prepared by the TypeORM driver. */
export type ColumnValue = [column: string, value: unknown];

/** Every statement of conditional (If-Match) writes. Each check-and-write is ONE statement. */
export interface ConditionalSql {
  /**
   * Updates the row with `key` when its version is one of `expected` (or when it exists, for
   * `'any'`) and bumps the version; returns the new version, or undefined when no row matched.
   */
  update(
    exec: SqlExecutor,
    t: VersionedTableSql,
    key: unknown[],
    set: ColumnValue[],
    expected: VersionValue[] | 'any',
  ): Promise<VersionValue | undefined>;
  /** Inserts the row (keys included in `values`); returns its version, or undefined when a row with that primary key exists. */
  insert(
    exec: SqlExecutor,
    t: VersionedTableSql,
    key: unknown[],
    values: ColumnValue[],
  ): Promise<VersionValue | undefined>;
  /** Deletes the row when its version is one of `expected` (or when it exists, for `'any'`); true when a row was deleted. */
  delete(
    exec: SqlExecutor,
    t: VersionedTableSql,
    key: unknown[],
    expected: VersionValue[] | 'any',
  ): Promise<boolean>;
}
