import type {
  ConditionalSql,
  VersionedTableSql,
  VersionValue,
} from '../contracts/conditional.contract';
import { Binder, type SqlStyle } from './sql-style';

/** The pieces every dialect's conditional statements are built from, in its quoting and placeholders. */
export function conditionalClauses(style: SqlStyle) {
  const q = style.quote;
  return {
    q,
    /** The table, schema-qualified when it has a schema. */
    table: (t: VersionedTableSql) => (t.schema ? `${q(t.schema)}.${q(t.table)}` : q(t.table)),
    /** `key1 = ? AND key2 = ?` */
    keyPredicate: (t: VersionedTableSql, key: unknown[], p: Binder) =>
      t.keyColumns.map((c, i) => `${q(c)} = ${p.add(key[i])}`).join(' AND '),
    /** ` AND version IN (…)`, or nothing for `'any'`. */
    versionPredicate: (v: string, expected: VersionValue[] | 'any', p: Binder) =>
      expected === 'any' ? '' : ` AND ${v} IN (${expected.map((e) => p.add(e)).join(', ')})`,
    binder: () => new Binder(style),
  };
}

/**
 * PostgreSQL and SQLite (3.35+): the version check is in the WHERE clause of the one UPDATE or
 * DELETE that writes, the new counter comes back with RETURNING, and insert-if-absent is
 * `ON CONFLICT (<primary key>) DO NOTHING RETURNING` (no row back: the key exists; no error, so
 * the caller's transaction stays usable; another unique violation still raises).
 * `useSchema`: SQLite has no schemas, its tables are named bare.
 */
export function returningConditionalSql(style: SqlStyle, useSchema: boolean): ConditionalSql {
  const c = conditionalClauses(style);
  const { q } = c;
  const table = useSchema ? c.table : (t: VersionedTableSql) => q(t.table);
  return {
    async update(exec, t, key, set, expected) {
      const p = c.binder();
      const v = q(t.versionColumn);
      const assignments = [
        ...set.map(([col, value]) => `${q(col)} = ${p.add(value)}`),
        `${v} = ${v} + 1`,
      ];
      const where = c.keyPredicate(t, key, p) + c.versionPredicate(v, expected, p);
      const { rows } = await exec(
        `UPDATE ${table(t)} SET ${assignments.join(', ')} WHERE ${where} RETURNING ${v} AS v`,
        p.values,
      );
      return rows.length === 1 ? Number(rows[0].v) : undefined;
    },
    async insert(exec, t, _key, values) {
      const p = c.binder();
      const columns = [...values.map(([col]) => q(col)), q(t.versionColumn)];
      const placeholders = [...values.map(([, value]) => p.add(value)), '1'];
      const { rows } = await exec(
        `INSERT INTO ${table(t)} (${columns.join(', ')}) VALUES (${placeholders.join(', ')})
         ON CONFLICT (${t.keyColumns.map(q).join(', ')}) DO NOTHING
         RETURNING ${q(t.versionColumn)} AS v`,
        p.values,
      );
      return rows.length === 1 ? Number(rows[0].v) : undefined;
    },
    async delete(exec, t, key, expected) {
      const p = c.binder();
      const where = c.keyPredicate(t, key, p) + c.versionPredicate(q(t.versionColumn), expected, p);
      const { affected } = await exec(`DELETE FROM ${table(t)} WHERE ${where}`, p.values);
      return affected === 1;
    },
  };
}
