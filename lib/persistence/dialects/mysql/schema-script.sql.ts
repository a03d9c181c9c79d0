import type { SchemaScriptWriter } from '../contracts/schema.contract';

const q = (id: string) => `\`${id.replace(/`/g, '``')}\``;
const literal = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/**
 * For the mysql / mariadb client (`mysql app < schema.sql`). MySQL commits every DDL statement
 * on its own (no transaction can hold them), so the statements themselves are guarded: CREATE
 * TABLE IF NOT EXISTS (the tables carry their indexes), and the migration is recorded once.
 */
export const mysqlSchemaScript: SchemaScriptWriter = (migrations, o) => {
  const table = q(o.migrationsTable);
  const parts: string[] = [
    [
      `-- TypeORM's migrations table (the columns TypeORM creates), recording what ran.`,
      `CREATE TABLE IF NOT EXISTS ${table} (`,
      '  `id` INT NOT NULL AUTO_INCREMENT,',
      '  `timestamp` BIGINT NOT NULL,',
      '  `name` VARCHAR(255) NOT NULL,',
      '  PRIMARY KEY (`id`)',
      ') ENGINE=InnoDB;',
    ].join('\n'),
  ];
  for (const m of migrations) {
    parts.push(
      [
        `-- Migration ${m.name}`,
        ...m.up.map((sql) =>
          /^ALTER TABLE /.test(sql) ? unlessRecorded(sql, table, m.name) : `${ifNotExists(sql)};`,
        ),
        `INSERT INTO ${table} (\`timestamp\`, \`name\`) SELECT ${m.timestamp}, ${literal(m.name)} FROM DUAL`,
        `  WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE \`name\` = ${literal(m.name)});`,
      ].join('\n'),
    );
  }
  return [...o.header.map((l) => `-- ${l}`.trimEnd()), '', parts.join('\n\n'), ''].join('\n');
};

function ifNotExists(sql: string): string {
  return sql.replace(/^CREATE TABLE (?!IF NOT EXISTS)/, 'CREATE TABLE IF NOT EXISTS ');
}

/**
 * An ALTER TABLE cannot say IF NOT EXISTS on MySQL (MariaDB's ADD COLUMN IF NOT EXISTS is its
 * own): it runs as a prepared statement only while the migrations table does not record its
 * migration, and as `DO 0` (nothing) once it does.
 */
function unlessRecorded(sql: string, migrationsTable: string, name: string): string {
  return [
    `SET @eo_ddl := IF(EXISTS (SELECT 1 FROM ${migrationsTable} WHERE \`name\` = ${literal(name)}), 'DO 0', ${literal(sql)});`,
    'PREPARE eo_ddl FROM @eo_ddl;',
    'EXECUTE eo_ddl;',
    'DEALLOCATE PREPARE eo_ddl;',
  ].join('\n');
}
