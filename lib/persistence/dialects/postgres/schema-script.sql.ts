import type { SchemaScriptWriter } from '../contracts/schema.contract';

const q = (id: string) => `"${id.replace(/"/g, '""')}"`;
const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * One transaction for psql (`psql -v ON_ERROR_STOP=1 -f …`): PostgreSQL's DDL is transactional,
 * so a failure leaves nothing behind. Each migration is a DO block that runs only when TypeORM's
 * migrations table does not record it.
 */
export const postgresSchemaScript: SchemaScriptWriter = (migrations, o) => {
  const table = q(o.migrationsTable);
  const parts: string[] = ['BEGIN;'];
  if (o.schema) parts.push(`CREATE SCHEMA IF NOT EXISTS ${q(o.schema)};`);
  parts.push(
    [
      `-- TypeORM's migrations table (the columns TypeORM creates), recording what ran.`,
      `CREATE TABLE IF NOT EXISTS ${table} (`,
      `  "id" SERIAL NOT NULL,`,
      `  "timestamp" BIGINT NOT NULL,`,
      `  "name" CHARACTER VARYING NOT NULL,`,
      `  CONSTRAINT ${q(`PK_${o.migrationsTable}`)} PRIMARY KEY ("id")`,
      `);`,
    ].join('\n'),
  );
  for (const m of migrations) {
    parts.push(
      [
        `-- Migration ${m.name}`,
        'DO $migration$',
        'BEGIN',
        `  IF NOT EXISTS (SELECT 1 FROM ${table} WHERE "name" = ${literal(m.name)}) THEN`,
        ...m.up.map((sql) => `${indent(sql, '    ')};`),
        `    INSERT INTO ${table} ("timestamp", "name") VALUES (${m.timestamp}, ${literal(m.name)});`,
        '  END IF;',
        'END',
        '$migration$;',
      ].join('\n'),
    );
  }
  parts.push('COMMIT;');
  return [...o.header.map((l) => `-- ${l}`.trimEnd()), '', parts.join('\n\n'), ''].join('\n');
};

function indent(sql: string, by: string): string {
  return sql
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}
