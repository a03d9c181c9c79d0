import type {
  ConditionalSql,
  VersionedTableSql,
  VersionValue,
} from '../contracts/conditional.contract';
import { conditionalClauses } from '../portable/conditional.sql';
import { MSSQL_STYLE } from './mssql.helpers';

const { q, table, keyPredicate, versionPredicate, binder } = conditionalClauses(MSSQL_STYLE);

/**
 * T-SQL that lets the CURRENT SESSION create ROWVERSION columns on Babelfish, which rejects the
 * type unless `babelfishpg_tsql.escape_hatch_rowversion` is 'ignore'. On SQL Server the IF is
 * false and the procedure (which does not exist there) is never called. Run it as its own batch
 * before the DDL, on the migration's connection. Only DDL needs it: reads and writes of an
 * existing rowversion column work without it.
 */
export const MSSQL_ALLOW_ROWVERSION_DDL = `IF @@VERSION LIKE 'Babelfish%' EXEC sp_babelfish_configure 'escape_hatch_rowversion', 'ignore'`;

/**
 * SQL Server (and Babelfish). The version check is in the WHERE clause of the one UPDATE or
 * DELETE that writes, and the new version comes back from the same statement through
 * `OUTPUT inserted.<version> INTO @out` (INTO a table variable, so that tables with triggers work).
 * Decisions never use the rows-affected count: Babelfish reports 0 for statements with OUTPUT.
 * A `rowversion` column is set by the server on every write; a `counter` is incremented here.
 * Insert-if-absent catches the duplicate-key errors 2601/2627 of the primary key in TRY/CATCH
 * (a violation of another unique index is rethrown). No MERGE.
 */
export function mssqlConditionalSql(): ConditionalSql {
  return {
    async update(exec, t, key, set, expected) {
      const p = binder();
      const v = q(t.versionColumn);
      const assignments = set.map(([c, value]) => `${q(c)} = ${p.add(value)}`);
      if (t.versionKind === 'counter') assignments.push(`${v} = ${v} + 1`);
      const where = keyPredicate(t, key, p) + versionPredicate(v, expected, p);
      const { rows } = await exec(
        `DECLARE @out TABLE (v ${outType(t)});
         UPDATE ${table(t)} SET ${assignments.join(', ')}
           OUTPUT inserted.${v} INTO @out
          WHERE ${where};
         SELECT v FROM @out;`,
        p.values,
      );
      return rows.length === 1 ? versionOf(t, rows[0].v) : undefined;
    },
    async insert(exec, t, key, values) {
      const p = binder();
      const columns = values.map(([c]) => q(c));
      const placeholders = values.map(([, value]) => p.add(value));
      if (t.versionKind === 'counter') {
        columns.push(q(t.versionColumn));
        placeholders.push('1');
      }
      const exists = keyPredicate(t, key, p);
      const { rows } = await exec(
        `DECLARE @out TABLE (v ${outType(t)});
         DECLARE @outcome VARCHAR(8) = 'inserted';
         BEGIN TRY
           INSERT INTO ${table(t)} (${columns.join(', ')})
             OUTPUT inserted.${q(t.versionColumn)} INTO @out
           VALUES (${placeholders.join(', ')});
         END TRY
         BEGIN CATCH
           IF ERROR_NUMBER() IN (2601, 2627) AND EXISTS (SELECT 1 FROM ${table(t)} WHERE ${exists}) SET @outcome = 'exists';
           ELSE THROW;
         END CATCH;
         SELECT @outcome AS outcome, (SELECT TOP (1) v FROM @out) AS v;`,
        p.values,
      );
      const r = rows[0];
      return r?.outcome === 'inserted' && r.v !== null && r.v !== undefined
        ? versionOf(t, r.v)
        : undefined;
    },
    async delete(exec, t, key, expected) {
      const p = binder();
      const where = keyPredicate(t, key, p) + versionPredicate(q(t.versionColumn), expected, p);
      const { rows } = await exec(
        `DELETE FROM ${table(t)} WHERE ${where}; SELECT @@ROWCOUNT AS n;`,
        p.values,
      );
      return Number(rows[0]?.n ?? 0) === 1;
    },
  };
}

const outType = (t: VersionedTableSql) => (t.versionKind === 'rowversion' ? 'BINARY(8)' : 'BIGINT');

function versionOf(t: VersionedTableSql, raw: unknown): VersionValue {
  if (t.versionKind === 'rowversion') {
    return Buffer.isBuffer(raw) ? raw : Buffer.from(raw as Uint8Array);
  }
  return Number(raw);
}
