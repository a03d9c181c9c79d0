import type { ConditionalSql, VersionedTableSql, VersionValue } from '../dialect';

const q = (id: string) => `"${id.replace(/"/g, '""')}"`;

/**
 * PostgreSQL. The version check is in the WHERE clause of the one UPDATE or DELETE that writes;
 * a concurrent writer of the same row waits for the first to commit and then re-checks the
 * predicate on the new row version (READ COMMITTED), so it matches nothing. The new counter comes
 * back with RETURNING. Insert-if-absent is `ON CONFLICT (<primary key>) DO NOTHING` (no error, so
 * the caller's transaction stays usable; another unique violation still raises).
 */
export function postgresConditionalSql(): ConditionalSql {
  return {
    async update(exec, t, key, set, expected) {
      const p = new Params();
      const v = q(t.versionColumn);
      const assignments = [
        ...set.map(([c, value]) => `${q(c)} = ${p.add(value)}`),
        `${v} = ${v} + 1`,
      ];
      const where = keyPredicate(t, key, p) + versionPredicate(v, expected, p);
      const { rows } = await exec(
        `UPDATE ${table(t)} SET ${assignments.join(', ')} WHERE ${where} RETURNING ${v} AS v`,
        p.values,
      );
      return rows.length === 1 ? Number(rows[0].v) : undefined;
    },
    async insert(exec, t, _key, values) {
      const p = new Params();
      const columns = [...values.map(([c]) => q(c)), q(t.versionColumn)];
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
      const p = new Params();
      const where = keyPredicate(t, key, p) + versionPredicate(q(t.versionColumn), expected, p);
      const { affected } = await exec(`DELETE FROM ${table(t)} WHERE ${where}`, p.values);
      return affected === 1;
    },
  };
}

/** Positional parameters $1, $2, … */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

const table = (t: VersionedTableSql) => (t.schema ? `${q(t.schema)}.${q(t.table)}` : q(t.table));

function keyPredicate(t: VersionedTableSql, key: unknown[], p: Params): string {
  return t.keyColumns.map((c, i) => `${q(c)} = ${p.add(key[i])}`).join(' AND ');
}

function versionPredicate(v: string, expected: VersionValue[] | 'any', p: Params): string {
  return expected === 'any' ? '' : ` AND ${v} IN (${expected.map((e) => p.add(e)).join(', ')})`;
}
