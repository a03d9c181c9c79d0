import type { ConditionalSql, VersionedTableSql, VersionValue } from '../dialect';

const q = (id: string) => `"${id.replace(/"/g, '""')}"`;

/**
 * SQLite (3.35+ for RETURNING). One writer at a time, and the library serializes transactions
 * in process, so the single UPDATE … WHERE version IN (…) RETURNING decides alone. Insert-if-absent
 * is `ON CONFLICT (<primary key>) DO NOTHING RETURNING` (no row back: the key exists).
 */
export function sqliteConditionalSql(): ConditionalSql {
  return {
    async update(exec, t, key, set, expected) {
      const p: unknown[] = [];
      const v = q(t.versionColumn);
      const assignments = [
        ...set.map(([c, value]) => `${q(c)} = ${bind(p, value)}`),
        `${v} = ${v} + 1`,
      ];
      const where = keyPredicate(t, key, p) + versionPredicate(v, expected, p);
      const { rows } = await exec(
        `UPDATE ${q(t.table)} SET ${assignments.join(', ')} WHERE ${where} RETURNING ${v} AS v`,
        p,
      );
      return rows.length === 1 ? Number(rows[0].v) : undefined;
    },
    async insert(exec, t, _key, values) {
      const p: unknown[] = [];
      const columns = [...values.map(([c]) => q(c)), q(t.versionColumn)];
      const placeholders = [...values.map(([, value]) => bind(p, value)), '1'];
      const { rows } = await exec(
        `INSERT INTO ${q(t.table)} (${columns.join(', ')}) VALUES (${placeholders.join(', ')})
         ON CONFLICT (${t.keyColumns.map(q).join(', ')}) DO NOTHING
         RETURNING ${q(t.versionColumn)} AS v`,
        p,
      );
      return rows.length === 1 ? Number(rows[0].v) : undefined;
    },
    async delete(exec, t, key, expected) {
      const p: unknown[] = [];
      const where = keyPredicate(t, key, p) + versionPredicate(q(t.versionColumn), expected, p);
      const { affected } = await exec(`DELETE FROM ${q(t.table)} WHERE ${where}`, p);
      return affected === 1;
    },
  };
}

function bind(p: unknown[], value: unknown): string {
  p.push(value);
  return '?';
}

function keyPredicate(t: VersionedTableSql, key: unknown[], p: unknown[]): string {
  return t.keyColumns.map((c, i) => `${q(c)} = ${bind(p, key[i])}`).join(' AND ');
}

function versionPredicate(v: string, expected: VersionValue[] | 'any', p: unknown[]): string {
  return expected === 'any' ? '' : ` AND ${v} IN (${expected.map((e) => bind(p, e)).join(', ')})`;
}
