import type { SchemaSql } from '../contracts/schema.contract';

/** A migration step with nothing to do on this database (the DDL of another one needs it). */
export function noDdlChange(): SchemaSql {
  return { up: [], down: [] };
}

/** A table created by `up` (its CREATE TABLE, then its indexes and rows) and dropped whole. */
export function createdTable(T: string, up: string[]): SchemaSql {
  return { up, down: [`DROP TABLE ${T}`] };
}

/**
 * Columns added to table `T` (name as the dialect writes it, then its type and nullability) and
 * dropped again: in one ALTER TABLE (PostgreSQL, MySQL, MariaDB), or one ALTER TABLE per column
 * with the drops in reverse order (`perStatement`: SQLite takes one column per ALTER TABLE).
 */
export function addedColumns(
  T: string,
  columns: ReadonlyArray<readonly [name: string, type: string]>,
  perStatement = false,
): SchemaSql {
  const add = columns.map(([c, type]) => `ADD COLUMN ${c} ${type}`);
  const drop = columns.map(([c]) => `DROP COLUMN ${c}`);
  if (perStatement) {
    return {
      up: add.map((a) => `ALTER TABLE ${T} ${a}`),
      down: drop.reverse().map((d) => `ALTER TABLE ${T} ${d}`),
    };
  }
  return {
    up: [`ALTER TABLE ${T} ${add.join(', ')}`],
    down: [`ALTER TABLE ${T} ${drop.join(', ')}`],
  };
}
