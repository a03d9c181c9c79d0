import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';

/** A database the suites run against. */
export interface TestDatabaseKind {
  name: 'sqlite' | 'postgres' | 'mariadb' | 'mssql';
}

export const PG_ADMIN_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const MARIADB_ADMIN_URL = process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306/test';
export const MSSQL_URL = process.env.MSSQL_URL;
/** Pooled connections per DataSource on a SQL Server test database (see createServerDatabase). */
const MSSQL_TEST_POOL = process.env.MSSQL_TEST_POOL ?? '4';

/** The URL with its `pool` (connections per DataSource) set to `n`, replacing any it had. */
export function withPool(url: string, n: number): string {
  const u = new URL(url);
  u.searchParams.set('pool', String(n));
  return u.toString();
}

const isCI = () => process.env.CI === 'true' || process.env.CI === '1';

/**
 * The databases of this run: SQLite always; PostgreSQL and MariaDB unless SKIP_POSTGRES=1 /
 * SKIP_MARIADB=1 (an unreachable one fails the run, it is never skipped silently);
 * SQL Server whenever MSSQL_URL is set. Call at module level: `describe.each(await …)` is not
 * possible in Jest, so suites use `forEachDatabase()`.
 */
export function databaseKinds(): TestDatabaseKind['name'][] {
  const kinds: TestDatabaseKind['name'][] = ['sqlite'];
  const only = process.env.TEST_DATABASES?.split(',').map((s) => s.trim());
  const want = (k: TestDatabaseKind['name']) => !only || only.includes(k);
  if (want('postgres') && process.env.SKIP_POSTGRES !== '1') kinds.push('postgres');
  if (want('mariadb') && process.env.SKIP_MARIADB !== '1') kinds.push('mariadb');
  if (want('mssql') && MSSQL_URL) kinds.push('mssql');
  return kinds.filter(want);
}

/** A fresh, empty database of the given kind, and how to drop it. */
export interface TestDatabase {
  kind: TestDatabaseKind['name'];
  url: string;
  drop(): Promise<void>;
}

const unique = (prefix: string) =>
  `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;

export async function createTestDatabase(kind: TestDatabaseKind['name']): Promise<TestDatabase> {
  switch (kind) {
    case 'sqlite': {
      const dir = mkdtempSync(join(tmpdir(), 'eo-sqlite-'));
      return {
        kind,
        url: `sqlite:${join(dir, 'test.sqlite')}`,
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    }
    case 'postgres':
      return createServerDatabase(
        kind,
        PG_ADMIN_URL,
        (name) => `CREATE DATABASE ${name}`,
        (name) => [`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`],
      );
    case 'mariadb':
      return createServerDatabase(
        kind,
        MARIADB_ADMIN_URL,
        (name) => `CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
        (name) => [`DROP DATABASE IF EXISTS ${name}`],
      );
    case 'mssql':
      if (!MSSQL_URL) throw new Error('MSSQL_URL is not set');
      return createServerDatabase(
        kind,
        MSSQL_URL,
        (name) => `CREATE DATABASE ${name}`,
        // Two statements: Babelfish has no ALTER DATABASE, and the DROP must run all the same.
        (name) => [
          `IF DB_ID('${name}') IS NOT NULL ALTER DATABASE ${name} SET SINGLE_USER WITH ROLLBACK IMMEDIATE`,
          `IF DB_ID('${name}') IS NOT NULL DROP DATABASE ${name}`,
        ],
      );
  }
}

/**
 * Babelfish 4.3 (not SQL Server): `CREATE DATABASE` / `DROP DATABASE` from several connections at
 * once fail with PostgreSQL's "tuple concurrently updated" (both update the same catalog rows), so
 * Jest workers starting suites together collide. Such an attempt changed nothing and is tried
 * again after a random pause; SQL Server serializes these statements itself and never says this.
 */
const CATALOG_RACE_ATTEMPTS = 20;
const isCatalogRace = (kind: TestDatabaseKind['name'], e: unknown) =>
  kind === 'mssql' && /tuple concurrently updated/.test(String((e as Error)?.message));
const catalogRacePause = () =>
  new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(Math.random() * 400)));

async function createServerDatabase(
  kind: TestDatabaseKind['name'],
  adminUrl: string,
  create: (name: string) => string,
  drop: (name: string) => string[],
): Promise<TestDatabase> {
  const admin = new DataSource({
    ...(databaseOptionsFromUrl(adminUrl) as any),
    connectTimeoutMS: 5000,
    connectTimeout: 5000,
  });
  try {
    await admin.initialize();
  } catch (e) {
    const hint = isCI()
      ? ' (CI=true: every database of the suite must be reachable)'
      : ' (set SKIP_' + kind.toUpperCase() + '=1 to leave it out locally)';
    throw new Error(`${kind} at ${adminUrl} is unreachable${hint}: ${(e as Error).message}`);
  }
  let name = unique('eo');
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(create(name));
        break;
      } catch (e) {
        if (attempt >= CATALOG_RACE_ATTEMPTS || !isCatalogRace(kind, e)) throw e;
        // A fresh name: nothing of the failed attempt is reused.
        name = unique('eo');
        await catalogRacePause();
      }
    }
  } finally {
    await admin.destroy();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  // SQL Server (Babelfish): every pooled connection is a new server backend, whose T-SQL parser
  // starts cold (about 0.2 s of server CPU to connect, then about 60 ms per batch until it has
  // seen the batch some 30 times, against 7 ms warm: measured 2026-11-27). The driver's default
  // pool of 10 per DataSource, times the suite's apps, kept both cores busy warming backends.
  if (kind === 'mssql' && !u.searchParams.has('pool')) u.searchParams.set('pool', MSSQL_TEST_POOL);
  return {
    kind,
    url: u.toString(),
    drop: async () => {
      const a = new DataSource(databaseOptionsFromUrl(adminUrl));
      await a.initialize();
      try {
        for (const statement of drop(name)) {
          for (let attempt = 1; ; attempt++) {
            try {
              await a.query(statement);
              break;
            } catch (e) {
              if (attempt < CATALOG_RACE_ATTEMPTS && isCatalogRace(kind, e)) {
                await catalogRacePause();
                continue;
              }
              // A server that still holds connections, or a statement Babelfish lacks: go on;
              // at worst the database is left behind (names are unique).
              break;
            }
          }
        }
      } finally {
        await a.destroy();
      }
    },
  };
}

/** Opens a plain DataSource on a test database (for direct assertions on tables). */
export async function openDataSource(url: string): Promise<DataSource> {
  const options = { ...(databaseOptionsFromUrl(url) as any) };
  // SQL Server (Babelfish): the test's own statements (assertions, planted records) may open a
  // cold connection while both Jest workers load the server; its first batch then starts late,
  // past the driver's default 15 s request time-out on a slow 2-core machine (CI, 2026-11-26).
  if (options.type === 'mssql') options.requestTimeout = 60_000;
  const ds = new DataSource(options);
  await ds.initialize();
  return ds;
}

/**
 * A fresh database of `kind` and a DataSource on it for the test's own queries (a spec's
 * `beforeAll`; `closeTestDatabase` in its `afterAll`). Should the DataSource fail to open, the
 * database is dropped again.
 */
export async function openTestDatabase(
  kind: TestDatabaseKind['name'],
): Promise<{ db: TestDatabase; ds: DataSource }> {
  const db = await createTestDatabase(kind);
  try {
    return { db, ds: await openDataSource(db.url) };
  } catch (e) {
    await db.drop();
    throw e;
  }
}

/** Destroys the DataSource and drops the database of `openTestDatabase`; either may be missing. */
export async function closeTestDatabase(parts: {
  ds?: DataSource;
  db?: TestDatabase;
}): Promise<void> {
  await parts.ds?.destroy();
  await parts.db?.drop();
}

/** Placeholder syntax of each database for raw assertions. */
export const placeholder = (kind: TestDatabaseKind['name'], i: number) =>
  kind === 'postgres' ? `$${i + 1}` : kind === 'mssql' ? `@${i}` : '?';
