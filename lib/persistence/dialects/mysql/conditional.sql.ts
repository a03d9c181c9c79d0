import type { ConditionalSql, VersionedTableSql, VersionValue } from '../dialect';

const q = (id: string) => `\`${id.replace(/`/g, '``')}\``;

/** ER_DUP_ENTRY. */
const DUPLICATE_KEY = 1062;

/**
 * MySQL / MariaDB (InnoDB). The version check is in the WHERE clause of the one UPDATE or DELETE
 * that writes; UPDATE reads the latest committed row under its lock, so a concurrent writer with
 * the same expected version matches nothing once the first commits. Neither server has UPDATE …
 * RETURNING: the new counter comes back from the same statement as its insert id, through
 * `version = LAST_INSERT_ID(version + 1)`. (The version always changes, so "rows changed"
 * equals "rows matched".) Insert-if-absent catches ER_DUP_ENTRY (a statement error that leaves
 * the transaction usable) and confirms with a locking read that the primary key, not another
 * unique index, collided.
 */
export function mysqlConditionalSql(): ConditionalSql {
  return {
    async update(exec, t, key, set, expected) {
      const p: unknown[] = [];
      const v = q(t.versionColumn);
      const assignments = [
        ...set.map(([c, value]) => `${q(c)} = ${bind(p, value)}`),
        `${v} = LAST_INSERT_ID(${v} + 1)`,
      ];
      const where = keyPredicate(t, key, p) + versionPredicate(v, expected, p);
      const { affected, rows } = await exec(
        `UPDATE ${table(t)} SET ${assignments.join(', ')} WHERE ${where}`,
        p,
      );
      return affected === 1 ? Number(rows[0]?.insertId) : undefined;
    },
    async insert(exec, t, key, values) {
      const p: unknown[] = [];
      const columns = [...values.map(([c]) => q(c)), q(t.versionColumn)];
      const placeholders = [...values.map(([, value]) => bind(p, value)), '1'];
      try {
        await exec(
          `INSERT INTO ${table(t)} (${columns.join(', ')}) VALUES (${placeholders.join(', ')})`,
          p,
        );
        return 1;
      } catch (e) {
        if (errno(e) !== DUPLICATE_KEY) throw e;
        const k: unknown[] = [];
        const { rows } = await exec(
          `SELECT 1 AS found FROM ${table(t)} WHERE ${keyPredicate(t, key, k)} LOCK IN SHARE MODE`,
          k,
        );
        if (rows.length === 0) throw e;
        return undefined;
      }
    },
    async delete(exec, t, key, expected) {
      const p: unknown[] = [];
      const where = keyPredicate(t, key, p) + versionPredicate(q(t.versionColumn), expected, p);
      const { affected } = await exec(`DELETE FROM ${table(t)} WHERE ${where}`, p);
      return affected === 1;
    },
  };
}

function errno(e: unknown): number | undefined {
  const err = e as { errno?: number; driverError?: { errno?: number } };
  return err?.driverError?.errno ?? err?.errno;
}

function bind(p: unknown[], value: unknown): string {
  p.push(value);
  return '?';
}

const table = (t: VersionedTableSql) => (t.schema ? `${q(t.schema)}.${q(t.table)}` : q(t.table));

function keyPredicate(t: VersionedTableSql, key: unknown[], p: unknown[]): string {
  return t.keyColumns.map((c, i) => `${q(c)} = ${bind(p, key[i])}`).join(' AND ');
}

function versionPredicate(v: string, expected: VersionValue[] | 'any', p: unknown[]): string {
  return expected === 'any' ? '' : ` AND ${v} IN (${expected.map((e) => bind(p, e)).join(', ')})`;
}
