import type { ConditionalSql } from '../contracts/conditional.contract';
import { conditionalClauses } from '../portable/conditional.sql';
import { ER_DUP_ENTRY, MYSQL_STYLE, mysqlErrno } from './mysql.helpers';

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
  const { q, table, keyPredicate, versionPredicate, binder } = conditionalClauses(MYSQL_STYLE);
  return {
    async update(exec, t, key, set, expected) {
      const p = binder();
      const v = q(t.versionColumn);
      const assignments = [
        ...set.map(([c, value]) => `${q(c)} = ${p.add(value)}`),
        `${v} = LAST_INSERT_ID(${v} + 1)`,
      ];
      const where = keyPredicate(t, key, p) + versionPredicate(v, expected, p);
      const { affected, rows } = await exec(
        `UPDATE ${table(t)} SET ${assignments.join(', ')} WHERE ${where}`,
        p.values,
      );
      return affected === 1 ? Number(rows[0]?.insertId) : undefined;
    },
    async insert(exec, t, key, values) {
      const p = binder();
      const columns = [...values.map(([c]) => q(c)), q(t.versionColumn)];
      const placeholders = [...values.map(([, value]) => p.add(value)), '1'];
      try {
        await exec(
          `INSERT INTO ${table(t)} (${columns.join(', ')}) VALUES (${placeholders.join(', ')})`,
          p.values,
        );
        return 1;
      } catch (e) {
        if (mysqlErrno(e) !== ER_DUP_ENTRY) throw e;
        const k = binder();
        const { rows } = await exec(
          `SELECT 1 AS found FROM ${table(t)} WHERE ${keyPredicate(t, key, k)} LOCK IN SHARE MODE`,
          k.values,
        );
        if (rows.length === 0) throw e;
        return undefined;
      }
    },
    async delete(exec, t, key, expected) {
      const p = binder();
      const where = keyPredicate(t, key, p) + versionPredicate(q(t.versionColumn), expected, p);
      const { affected } = await exec(`DELETE FROM ${table(t)} WHERE ${where}`, p.values);
      return affected === 1;
    },
  };
}
