import { DataSource } from 'typeorm';
import { getIdempotencyMigrations, type MigrationNamingOptions } from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';

/** The library's tables under a naming, as SQL names (schema-qualified where one is given). */
function tablesOf(kind: string, naming: MigrationNamingOptions): string[] {
  const names = ['idempotency_records', 'outbox_messages', 'inbox_messages'];
  const custom = [naming.tables?.idempotency, naming.tables?.outbox, naming.tables?.inbox];
  return names.map((n, i) => {
    const t = custom[i] ?? n;
    if (!naming.schema) return t;
    return kind === 'mssql' ? `[${naming.schema}].[${t}]` : `"${naming.schema}"."${t}"`;
  });
}

/**
 * Whether the outbox has the index the health check counts dead messages with: the partial /
 * filtered `ix_<outbox>_dead` of AddOutboxDeadIndex, or on MariaDB/MySQL (no partial indexes)
 * the `(status, seq)` index of the table itself.
 */
async function deadIndexExists(
  ds: DataSource,
  kind: string,
  naming: MigrationNamingOptions,
): Promise<boolean> {
  const outbox = naming.tables?.outbox ?? 'outbox_messages';
  const rows: unknown[] =
    kind === 'postgres'
      ? await ds.query('SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = $2', [
          naming.schema ?? 'public',
          `ix_${outbox}_dead`,
        ])
      : kind === 'sqlite'
        ? await ds.query(`SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?`, [
            `ix_${outbox}_dead`,
          ])
        : kind === 'mssql'
          ? await ds.query(
              // LIKE: Babelfish lists it as ix_<table>_dead followed by the table name and a hash.
              'SELECT 1 AS found FROM sys.indexes WHERE name LIKE @0 AND object_id = OBJECT_ID(@1)',
              [`IX[_]${outbox}[_]dead%`, `${naming.schema ?? 'dbo'}.${outbox}`],
            )
          : await ds.query(
              'SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?',
              [outbox, `ix_${outbox}_status_seq`],
            );
  return rows.length > 0;
}

/**
 * The names of the CHECK constraints on the library's tables, as the catalog spells them
 * (SQLite: none to read, its table text holds them).
 */
async function checkNames(
  ds: DataSource,
  kind: string,
  naming: MigrationNamingOptions,
): Promise<string[]> {
  const bare = [
    naming.tables?.idempotency ?? 'idempotency_records',
    naming.tables?.outbox ?? 'outbox_messages',
    naming.tables?.inbox ?? 'inbox_messages',
  ];
  const rows: Array<{ name: string }> =
    kind === 'postgres'
      ? await ds.query(
          `SELECT c.conname AS name FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
             JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE c.contype = 'c' AND n.nspname = $1 AND t.relname = ANY($2)`,
          [naming.schema ?? 'public', bare],
        )
      : kind === 'mssql'
        ? await ds.query(
            `SELECT k.name FROM sys.check_constraints k JOIN sys.tables t ON t.object_id = k.parent_object_id
               JOIN sys.schemas s ON s.schema_id = t.schema_id WHERE s.name = @0 AND t.name IN (@1, @2, @3)`,
            [naming.schema ?? 'dbo', ...bare],
          )
        : kind === 'sqlite'
          ? []
          : await ds.query(
              `SELECT CONSTRAINT_NAME AS name FROM information_schema.CHECK_CONSTRAINTS
                WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?, ?)`,
              bare,
            );
  return rows.map((r) => r.name).sort();
}

/** Whether the outbox has the `route` column of AddOutboxRoute. */
async function hasRouteColumn(ds: DataSource, table: string): Promise<boolean> {
  try {
    await ds.query(`SELECT route FROM ${table} WHERE 1 = 0`);
    return true;
  } catch {
    return false;
  }
}

async function exists(ds: DataSource, table: string): Promise<boolean> {
  try {
    await ds.query(`SELECT COUNT(*) AS n FROM ${table}`);
    return true;
  } catch {
    return false;
  }
}

describe.each(databaseKinds())('library migrations on %s', (kind) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const cases: Array<[string, MigrationNamingOptions]> = [
    ['default names', {}],
    [
      'custom table names',
      { tables: { idempotency: 'ops_keys', outbox: 'ops_events', inbox: 'ops_seen' } },
    ],
  ];
  if (kind === 'postgres' || kind === 'mssql') {
    cases.push([
      'a custom schema and table names',
      { schema: 'ops_schema', tables: { idempotency: 'k', outbox: 'o', inbox: 'i' } },
    ]);
  }

  it.each(cases)('run up, down, up again with %s', async (_label, naming) => {
    const migrations = getIdempotencyMigrations(naming);
    expect(migrations.length).toBeGreaterThanOrEqual(3);
    const ds = new DataSource({
      ...(databaseOptionsFromUrl(db.url) as any),
      migrations,
      migrationsTableName: `migrations_${Object.keys(naming).length}_${naming.schema ?? 'none'}`,
      logging: false,
    });
    await ds.initialize();
    try {
      if (naming.schema) {
        await ds.query(
          kind === 'mssql' ? `CREATE SCHEMA ${naming.schema}` : `CREATE SCHEMA "${naming.schema}"`,
        );
      }
      const tables = tablesOf(kind, naming);

      const up = await ds.runMigrations({ transaction: 'each' });
      expect(up.map((m) => m.name)).toEqual(migrations.map((m) => new m().name));
      for (const t of tables) expect(await exists(ds, t)).toBe(true);
      expect(await deadIndexExists(ds, kind, naming)).toBe(true);
      // CHECK constraints named ck_<table>_<column>, in lower case on every database (Babelfish
      // reports no other case; TypeORM matches them by name).
      const idem = naming.tables?.idempotency ?? 'idempotency_records';
      const outbox = naming.tables?.outbox ?? 'outbox_messages';
      const inbox = naming.tables?.inbox ?? 'inbox_messages';
      const expectedChecks =
        kind === 'sqlite'
          ? []
          : [`ck_${idem}_state`, `ck_${inbox}_status`, `ck_${outbox}_status`].sort();
      expect(await checkNames(ds, kind, naming)).toEqual(expectedChecks);

      // AddOutboxRoute undone: the route column goes.
      expect(await hasRouteColumn(ds, tables[1]!)).toBe(true);
      await ds.undoLastMigration({ transaction: 'each' });
      expect(await hasRouteColumn(ds, tables[1]!)).toBe(false);

      // AddOutboxFailureHistory undone: its two columns go.
      await ds.undoLastMigration({ transaction: 'each' });
      for (const t of tables) expect(await exists(ds, t)).toBe(true);
      // CreateOutboxKeyLocks undone: the key-lock table goes, the three tables stay.
      await ds.undoLastMigration({ transaction: 'each' });
      for (const t of tables) expect(await exists(ds, t)).toBe(true);
      // LowerCaseCheckNames undone: the names stay (the create migrations give them).
      await ds.undoLastMigration({ transaction: 'each' });
      expect(await checkNames(ds, kind, naming)).toEqual(expectedChecks);
      expect(await deadIndexExists(ds, kind, naming)).toBe(true);
      // AddOutboxDeadIndex undone: the dead-message index goes (MariaDB/MySQL: nothing to undo).
      await ds.undoLastMigration({ transaction: 'each' });
      for (const t of tables) expect(await exists(ds, t)).toBe(true);
      expect(await deadIndexExists(ds, kind, naming)).toBe(kind === 'mariadb');
      for (let i = 5; i < migrations.length; i++) {
        await ds.undoLastMigration({ transaction: 'each' });
      }
      for (const t of tables) expect(await exists(ds, t)).toBe(false);
      expect(await ds.showMigrations()).toBe(true);

      const again = await ds.runMigrations({ transaction: 'each' });
      expect(again).toHaveLength(migrations.length);
      for (const t of tables) expect(await exists(ds, t)).toBe(true);
      expect(await deadIndexExists(ds, kind, naming)).toBe(true);
      expect(await hasRouteColumn(ds, tables[1]!)).toBe(true);
      expect(await ds.showMigrations()).toBe(false);
    } finally {
      await ds.destroy();
    }
  });
});
