import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';

/** The built executable (package.json `bin`): specs run the real thing from dist/. */
export const CLI_BIN = join(__dirname, '..', '..', 'dist', 'lib', 'cli', 'main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node dist/lib/cli/main.js …args`. */
export function runCliBin(args: string[]): Promise<CliRun> {
  if (!existsSync(CLI_BIN)) throw new Error(`${CLI_BIN} is missing: run \`npm run build\` first`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Runs a schema script the way its client would: T-SQL split on `GO` lines (sqlcmd), PostgreSQL
 * as one simple-query text (psql), MySQL and SQLite statement by statement (`;` at a line end).
 */
export async function runSchemaScript(ds: DataSource, script: string): Promise<void> {
  const type = ds.options.type;
  if (type === 'mssql') {
    for (const batch of script.split(/^GO[ \t]*$/m)) {
      if (withoutComments(batch).trim()) await ds.query(batch);
    }
  } else if (type === 'postgres') {
    await ds.query(script);
  } else {
    for (const statement of script.split(/;[ \t]*$/m)) {
      if (!withoutComments(statement).trim()) continue;
      try {
        await ds.query(statement);
      } catch (e) {
        // The sqlite3 shell reports a failed statement and goes on (no -bail): SQLite has no
        // ADD COLUMN IF NOT EXISTS, so a second run meets the columns a first run added.
        const again =
          type === 'better-sqlite3' &&
          /^\s*(--.*\n\s*)*ALTER TABLE \S+ ADD COLUMN /.test(statement) &&
          /duplicate column name/.test(String(e));
        if (!again) throw e;
      }
    }
  }
}

const withoutComments = (sql: string) => sql.replace(/^\s*--.*$/gm, '');

/**
 * The library's tables as the database's catalog describes them (through TypeORM's schema
 * reader): columns (type, length, precision, nullability, identity, primary key), indexes (columns,
 * uniqueness, filter), unique and check constraints. Only names TypeORM reads back are compared.
 */
export async function catalogOf(ds: DataSource, tables: string[]): Promise<unknown> {
  const runner = ds.createQueryRunner();
  try {
    const loaded = await runner.getTables(tables);
    return loaded
      .map((t) => ({
        table: t.name.split('.').pop(),
        columns: t.columns
          .map((c) => ({
            name: c.name,
            type: c.type,
            length: c.length,
            precision: c.precision ?? null,
            scale: c.scale ?? null,
            nullable: c.isNullable,
            generated: c.isGenerated,
            primary: c.isPrimary,
            collation: c.collation ?? null,
          }))
          .sort((a, b) => a.name.localeCompare(b.name)),
        indices: t.indices
          .map((i) => ({
            name: i.name,
            columns: [...i.columnNames],
            unique: i.isUnique,
            where: i.where ?? null,
          }))
          .sort((a, b) => String(a.name).localeCompare(String(b.name))),
        uniques: t.uniques
          .map((u) => ({ name: u.name, columns: [...u.columnNames] }))
          .sort((a, b) => String(a.name).localeCompare(String(b.name))),
        checks: t.checks
          .map((c) => ({ name: c.name, expression: c.expression }))
          .sort((a, b) => String(a.name).localeCompare(String(b.name))),
      }))
      .sort((a, b) => String(a.table).localeCompare(String(b.table)));
  } finally {
    await runner.release();
  }
}
