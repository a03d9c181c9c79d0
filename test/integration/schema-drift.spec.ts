import { DataSource, type DataSourceOptions } from 'typeorm';
import {
  getIdempotencyEntities,
  getIdempotencyMigrations,
  withExactlyOnce,
  type LibraryTableNaming,
} from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';

/**
 * "Entities are the schema": after the library's migrations TypeORM's schema builder has nothing
 * to change (so `migration:generate` writes nothing and `synchronize` changes nothing), and a
 * schema created by `synchronize` alone is the migrated one, read back from the catalog.
 */

type Kind = ReturnType<typeof databaseKinds>[number];

/**
 * The DataSource options of a test database. MariaDB as `type: 'mariadb'`: TypeORM reads MariaDB's
 * column defaults right only under that type (under 'mysql' it takes MariaDB's `NULL` default of
 * every nullable column for the string 'NULL' and proposes to change them all).
 */
function optionsOf(kind: Kind, url: string): DataSourceOptions {
  const base = databaseOptionsFromUrl(url);
  return { ...base, ...(kind === 'mariadb' ? { type: 'mariadb' } : {}), logging: false } as any;
}

const tableNames = (naming: LibraryTableNaming) => [
  naming.tables?.idempotency ?? 'idempotency_records',
  naming.tables?.outbox ?? 'outbox_messages',
  naming.tables?.inbox ?? 'inbox_messages',
];

async function createSchema(ds: DataSource, kind: Kind, schema?: string): Promise<void> {
  if (schema) {
    await ds.query(kind === 'mssql' ? `CREATE SCHEMA ${schema}` : `CREATE SCHEMA "${schema}"`);
  }
}

/** What TypeORM's schema builder would run on this DataSource, one statement a line. */
async function pendingStatements(ds: DataSource): Promise<string[]> {
  const log = await ds.driver.createSchemaBuilder().log();
  const statements = log.upQueries.map((q) => q.query);
  return (await isBabelfish(ds)) ? withoutBabelfishNameChurn(ds, statements) : statements;
}

async function isBabelfish(ds: DataSource): Promise<boolean> {
  if (ds.options.type !== 'mssql') return false;
  const [row] = await ds.query('SELECT @@VERSION AS v');
  return /babelfish/i.test(String(row?.v));
}

/**
 * Babelfish 4.3 (the SQL Server stand-in the suite can run against) reports in sys.indexes the
 * PostgreSQL name of every index: the T-SQL name and its table's, lower-cased, cut to 31
 * characters, then an MD5 (`ux_idempotency_records_scope_keb0db…`), whatever the name's length;
 * TypeORM, which matches indexes by name, then proposes to drop and re-create each under its
 * declared name. Exactly those pairs are left out here (SQL Server keeps the names as written;
 * later Babelfish reports the original name, babelfish_extensions#3429); every other statement
 * still counts as drift. CHECK constraints are not filtered: Babelfish lower-cases their names,
 * and the library names them in lower case (LowerCaseCheckNames), so they must read back as
 * declared.
 */
function withoutBabelfishNameChurn(ds: DataSource, statements: string[]): string[] {
  const declared = ds.entityMetadatas.flatMap((m) =>
    m.indices.map((i) => ({ name: i.name, table: m.tableName })),
  );
  const decorated = (name: string, table: string) =>
    new RegExp(`^${(name.toLowerCase() + table).slice(0, 31)}[0-9a-f]{32}$`);
  const churned = new Set<string>();
  for (const s of statements) {
    const dropped = /^DROP INDEX "([^"]+)" ON "([^"]+)"/.exec(s);
    const match = dropped && declared.find((d) => decorated(d.name, d.table).test(dropped[1]));
    if (match) churned.add(`DROP INDEX "${dropped![1]}"`).add(`INDEX "${match.name}" ON`);
  }
  return statements.filter((s) => ![...churned].some((c) => s.includes(c)));
}

type Rows = Array<Record<string, unknown>>;
const norm = (s: unknown) => (typeof s === 'string' ? s.replace(/\s+/g, ' ').trim() : s);
const plain = (rows: Rows) =>
  rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, norm(v)])));

/**
 * The library's tables as the database's catalog describes them: columns (type, length,
 * precision, nullability, default, identity, character set, collation), constraints (primary
 * key, unique, check with its expression) and indexes (columns in order, uniqueness, filter
 * predicate). Differences TypeORM cannot express are left out, each named below.
 */
async function introspect(
  ds: DataSource,
  kind: Kind,
  naming: LibraryTableNaming,
): Promise<Record<string, unknown>> {
  const tables = tableNames(naming);
  switch (kind) {
    case 'sqlite': {
      // TypeORM reads a SQLite table back from its CREATE TABLE text: the texts must be equal.
      const objects = await ds.query(
        `SELECT type, name, tbl_name, sql FROM sqlite_master WHERE tbl_name IN (${tables
          .map(() => '?')
          .join(', ')}) AND name NOT LIKE 'sqlite_autoindex_%' ORDER BY type, name`,
        tables,
      );
      const columns: Rows = [];
      const indexes: Rows = [];
      for (const t of tables) {
        for (const c of await ds.query(`PRAGMA table_xinfo("${t}")`)) columns.push({ t, ...c });
        for (const i of await ds.query(`PRAGMA index_list("${t}")`)) {
          const cols = await ds.query(`PRAGMA index_info("${i.name}")`);
          indexes.push({ t, ...i, columns: cols.map((c: { name: string }) => c.name).join(',') });
        }
      }
      return { objects: plain(objects), columns, indexes };
    }
    case 'postgres': {
      const schema = naming.schema ?? 'public';
      const columns = await ds.query(
        `SELECT table_name, column_name, ordinal_position, data_type, character_maximum_length,
                datetime_precision, is_nullable, column_default, is_identity, collation_name
           FROM information_schema.columns
          WHERE table_schema = $1 AND table_name = ANY($2) ORDER BY table_name, ordinal_position`,
        [schema, tables],
      );
      // Left out: the identity's ALWAYS / BY DEFAULT (information_schema.columns.identity_generation).
      // The migrations write GENERATED ALWAYS; an EntitySchema cannot say ALWAYS, so synchronize
      // writes BY DEFAULT. TypeORM's schema builder does not compare them.
      const constraints = await ds.query(
        `SELECT t.relname AS table_name, c.conname, c.contype, pg_get_constraintdef(c.oid) AS def
           FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
           JOIN pg_namespace n ON n.oid = t.relnamespace
          WHERE n.nspname = $1 AND t.relname = ANY($2) ORDER BY t.relname, c.conname`,
        [schema, tables],
      );
      const indexes = await ds.query(
        `SELECT tablename, indexname, indexdef FROM pg_indexes
          WHERE schemaname = $1 AND tablename = ANY($2) ORDER BY tablename, indexname`,
        [schema, tables],
      );
      // Left out: pg_class.reloptions (the migrations' fillfactor = 80 / 85). A table storage
      // parameter TypeORM neither writes nor reads: synchronize leaves the default (100).
      return { columns: plain(columns), constraints: plain(constraints), indexes: plain(indexes) };
    }
    case 'mariadb': {
      const list = tables.map(() => '?').join(', ');
      const columns = await ds.query(
        `SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT,
                CHARACTER_SET_NAME, COLLATION_NAME, EXTRA
           FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (${list})
          ORDER BY TABLE_NAME, ORDINAL_POSITION`,
        tables,
      );
      const indexes = await ds.query(
        `SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME, INDEX_TYPE
           FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (${list})
          ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
        tables,
      );
      const engines = await ds.query(
        `SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.TABLES
          WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (${list}) ORDER BY TABLE_NAME`,
        tables,
      );
      // Left out: CHECK constraints. TypeORM's MySQL/MariaDB driver neither creates nor reads
      // them, so synchronize alone has none; the migrations create them (ck_<table>_status/state).
      return { columns: plain(columns), indexes: plain(indexes), engines: plain(engines) };
    }
    case 'mssql': {
      const schema = naming.schema ?? 'dbo';
      const list = tables.map((_, i) => `@${i + 1}`).join(', ');
      const args = [schema, ...tables];
      const columns = await ds.query(
        `SELECT t.name AS table_name, c.name AS column_name, c.column_id, ty.name AS type_name,
                c.max_length, c.precision, c.scale, c.is_nullable, c.is_identity, c.collation_name
           FROM sys.columns c JOIN sys.tables t ON t.object_id = c.object_id
           JOIN sys.schemas s ON s.schema_id = t.schema_id JOIN sys.types ty ON ty.user_type_id = c.user_type_id
          WHERE s.name = @0 AND t.name IN (${list}) ORDER BY t.name, c.column_id`,
        args,
      );
      const checks = await ds.query(
        `SELECT t.name AS table_name, k.name, k.definition FROM sys.check_constraints k
           JOIN sys.tables t ON t.object_id = k.parent_object_id JOIN sys.schemas s ON s.schema_id = t.schema_id
          WHERE s.name = @0 AND t.name IN (${list}) ORDER BY t.name, k.name`,
        args,
      );
      // Left out, as TypeORM cannot express them: CLUSTERED / NONCLUSTERED (sys.indexes.type_desc),
      // OPTIMIZE_FOR_SEQUENTIAL_KEY, INCLUDE columns, and so IX_<outbox>_pending (whose INCLUDE
      // columns keep it out of synchronize).
      const indexes = await ds.query(
        `SELECT t.name AS table_name, i.name, i.is_unique, i.is_primary_key, i.has_filter, i.filter_definition,
                STRING_AGG(CASE WHEN ic.is_included_column = 0 THEN c.name END, ',')
                  WITHIN GROUP (ORDER BY ic.key_ordinal) AS key_columns
           FROM sys.indexes i JOIN sys.tables t ON t.object_id = i.object_id
           JOIN sys.schemas s ON s.schema_id = t.schema_id
           JOIN sys.index_columns ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id
           JOIN sys.columns c ON c.object_id = ic.object_id AND c.column_id = ic.column_id
          WHERE s.name = @0 AND t.name IN (${list})
          GROUP BY t.name, i.name, i.is_unique, i.is_primary_key, i.has_filter, i.filter_definition
          ORDER BY t.name, i.name`,
        args,
      );
      // IX_<outbox>_pending by its name, or by the name Babelfish gives it (lower case, cut with
      // the table's name to 31 characters, an MD5 after it).
      const pending = (table: string) => [
        `IX_${table}_pending`,
        new RegExp(`^${`ix_${table}_pending${table}`.slice(0, 31)}[0-9a-f]{32}$`),
      ];
      const isPending = (r: Record<string, unknown>) =>
        pending(String(r.table_name)).some((p) =>
          typeof p === 'string' ? p === r.name : p.test(String(r.name)),
        );
      return {
        columns: plain(columns),
        checks: plain(checks),
        indexes: plain((indexes as Rows).filter((r) => !isPending(r))),
      };
    }
  }
}

describe.each(databaseKinds())('schema drift on %s', (kind) => {
  const databases: TestDatabase[] = [];
  const freshDatabase = async () => {
    const db = await createTestDatabase(kind);
    databases.push(db);
    return db;
  };
  afterAll(async () => {
    for (const db of databases) await db.drop();
  });

  const namings: Array<[string, LibraryTableNaming]> = [
    ['default names', {}],
    [
      'custom table names',
      { tables: { idempotency: 'ops_keys', outbox: 'ops_events', inbox: 'ops_seen' } },
    ],
  ];
  if (kind === 'postgres' || kind === 'mssql') {
    namings.push([
      'a custom schema',
      { schema: 'eo_schema', tables: { idempotency: 'k', outbox: 'o', inbox: 'i' } },
    ]);
  }

  /** A DataSource on a fresh database, through withExactlyOnce(), with the library's tables migrated. */
  async function migrated(naming: LibraryTableNaming): Promise<DataSource> {
    const db = await freshDatabase();
    const ds = new DataSource(withExactlyOnce(optionsOf(kind, db.url), naming));
    await ds.initialize();
    await createSchema(ds, kind, naming.schema);
    await ds.runMigrations({ transaction: 'each' });
    return ds;
  }

  it.each(namings)(
    'after the library migrations TypeORM has no statement to run (%s)',
    async (_label, naming) => {
      const ds = await migrated(naming);
      try {
        expect(await ds.showMigrations()).toBe(false);
        // The statements are the failure message: `migration:generate` would write these.
        expect(await pendingStatements(ds)).toEqual([]);
      } finally {
        await ds.destroy();
      }
    },
  );

  it.each(namings)(
    'synchronize alone creates the tables the migrations create (%s)',
    async (_label, naming) => {
      const viaMigrations = await migrated(naming);
      const db = await freshDatabase();
      const options = withExactlyOnce(optionsOf(kind, db.url), naming);
      const viaSynchronize = new DataSource({ ...options, synchronize: false });
      await viaSynchronize.initialize();
      try {
        await createSchema(viaSynchronize, kind, naming.schema);
        await viaSynchronize.synchronize();
        expect(await pendingStatements(viaSynchronize)).toEqual([]);
        expect(await introspect(viaSynchronize, kind, naming)).toEqual(
          await introspect(viaMigrations, kind, naming),
        );
      } finally {
        await viaSynchronize.destroy();
        await viaMigrations.destroy();
      }
    },
  );

  it('getIdempotencyEntities() takes the DataSource options and follows their type', async () => {
    const db = await freshDatabase();
    const options = optionsOf(kind, db.url);
    const ds = new DataSource({
      ...options,
      entities: getIdempotencyEntities(options),
      migrations: getIdempotencyMigrations(),
    } as DataSourceOptions);
    await ds.initialize();
    try {
      await ds.runMigrations({ transaction: 'each' });
      expect(await pendingStatements(ds)).toEqual([]);
    } finally {
      await ds.destroy();
    }
  });

  it('the library entities of another database type fail with a message naming the fix', async () => {
    const db = await freshDatabase();
    const options = optionsOf(kind, db.url);
    const other = kind === 'mssql' ? 'postgres' : 'mssql';
    const mixed = {
      ...options,
      entities: getIdempotencyEntities({ type: other }),
    } as DataSourceOptions;
    expect(() => withExactlyOnce(mixed)).toThrow(
      new RegExp(`include the library's entities built for ${other}.*withExactlyOnce\\(\\) adds`),
    );
    // Listed once by the user and once by withExactlyOnce(): one copy of each.
    const twice = withExactlyOnce({
      ...options,
      entities: getIdempotencyEntities(options),
      migrations: getIdempotencyMigrations(),
    } as DataSourceOptions);
    expect(twice.entities).toHaveLength(4);
    expect(twice.migrations).toHaveLength(getIdempotencyMigrations().length);
  });
});

describe('withExactlyOnce() and getIdempotencyEntities() without a usable type', () => {
  it('an unsupported DataSource type names the supported ones', () => {
    expect(() => withExactlyOnce({ type: 'oracle' } as DataSourceOptions)).toThrow(
      /withExactlyOnce\(\) got the DataSource type "oracle".*mssql, postgres, mysql, mariadb, better-sqlite3 or sqlite/,
    );
    expect(() => getIdempotencyEntities({ type: 'cockroachdb' })).toThrow(
      /getIdempotencyEntities\(\) got the DataSource type "cockroachdb"/,
    );
  });

  it('a missing type says to pass the DataSource options', () => {
    expect(() => getIdempotencyEntities({} as { type: string })).toThrow(
      /needs the DataSource type.*withExactlyOnce\(\{ type: 'postgres'/,
    );
  });

  it('keeps everything else of the options and appends entities and migrations', () => {
    class AppEntity {}
    class AppMigration1700000000000 {
      async up() {}
      async down() {}
    }
    const options = withExactlyOnce(
      {
        type: 'postgres',
        url: 'postgres://x@127.0.0.1/app',
        entities: [AppEntity],
        migrations: [AppMigration1700000000000],
        migrationsRun: true,
      },
      { tables: { outbox: 'events' } },
    );
    expect(options).toMatchObject({
      type: 'postgres',
      url: 'postgres://x@127.0.0.1/app',
      migrationsRun: true,
    });
    expect((options.entities as unknown[])[0]).toBe(AppEntity);
    expect(
      (options.entities as Array<{ options?: { tableName?: string } }>).map(
        (e) => e.options?.tableName,
      ),
    ).toEqual([undefined, 'idempotency_records', 'inbox_messages', 'events', 'events_key_locks']);
    expect((options.migrations as Array<{ name: string }>).map((m) => m.name)).toEqual([
      'AppMigration1700000000000',
      ...getIdempotencyMigrations().map((m) => m.name),
    ]);
  });
});
