import type { SchemaScriptWriter } from '../contracts/schema.contract';

const q = (id: string) => `"${id.replace(/"/g, '""')}"`;
const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * One transaction for the sqlite3 shell (`sqlite3 app.db < schema.sql`). SQLite has no
 * procedural IF, so the statements themselves are guarded: CREATE TABLE / CREATE INDEX with
 * IF NOT EXISTS (SQLite stores the statement without that clause in sqlite_master, so the table
 * reads back as the migration's), and the migration is recorded once.
 */
export const sqliteSchemaScript: SchemaScriptWriter = (migrations, o) => {
  const table = q(o.migrationsTable);
  const parts: string[] = [
    'BEGIN;',
    [
      `-- TypeORM's migrations table (the columns TypeORM creates), recording what ran.`,
      `CREATE TABLE IF NOT EXISTS ${table} ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "timestamp" bigint NOT NULL, "name" varchar NOT NULL);`,
    ].join('\n'),
  ];
  for (const m of migrations) {
    parts.push(
      [
        `-- Migration ${m.name}`,
        ...m.up.map((sql) => `${addColumnNote(sql)}${ifNotExists(sql)};`),
        `INSERT INTO ${table} ("timestamp", "name") SELECT ${m.timestamp}, ${literal(m.name)}`,
        `  WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE "name" = ${literal(m.name)});`,
      ].join('\n'),
    );
  }
  parts.push('COMMIT;');
  return [...o.header.map((l) => `-- ${l}`.trimEnd()), '', parts.join('\n\n'), ''].join('\n');
};

function ifNotExists(sql: string): string {
  return sql.replace(
    /^CREATE (TABLE|(?:UNIQUE )?INDEX) (?!IF NOT EXISTS)/,
    'CREATE $1 IF NOT EXISTS ',
  );
}

/**
 * SQLite has no `ADD COLUMN IF NOT EXISTS`: on a database that already has the column, the
 * statement fails with "duplicate column name" and the sqlite3 shell goes on with the next one
 * (unless run with -bail), so a second run of the script ends as the first.
 */
function addColumnNote(sql: string): string {
  return /^ALTER TABLE \S+ ADD COLUMN /.test(sql)
    ? `-- Already there on a second run: "duplicate column name", which the sqlite3 shell reports and passes.\n`
    : '';
}
