import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';

export type BenchDatabaseKind = 'postgres' | 'sqlite' | 'mariadb' | 'mssql';

/** A fresh, empty database for one benchmark run, and how to drop it. */
export interface ScratchDatabase {
  kind: BenchDatabaseKind;
  /** A DB_URL for the sample-app/bench-app config parser. */
  url: string;
  /** The database name on a server (undefined for SQLite). */
  name?: string;
  drop(): Promise<void>;
}

export const PG_ADMIN_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const MARIADB_ADMIN_URL = process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306/test';
/**
 * SQL Server (here: Babelfish for PostgreSQL, which speaks TDS): only when MSSQL_URL is set,
 * e.g. `mssql://babelfish_user:Bbf-Test-2026@127.0.0.1:1433/idem_test` as printed by
 * `bash ../shared/babelfish/start.sh` (run as root from the repository root).
 */
export const MSSQL_ADMIN_URL = process.env.MSSQL_URL;

/** Where SQL Server comes from on these machines, for a suite's error message. */
export const MSSQL_HINT =
  'here Babelfish stands in for it: `bash ../shared/babelfish/start.sh` (as root, from the repository root) starts it and prints the MSSQL_URL to export';

/** The admin URL of a server kind (throws for SQL Server without MSSQL_URL). */
export function adminUrl(kind: Exclude<BenchDatabaseKind, 'sqlite'>): string {
  switch (kind) {
    case 'postgres':
      return PG_ADMIN_URL;
    case 'mariadb':
      return MARIADB_ADMIN_URL;
    case 'mssql':
      if (!MSSQL_ADMIN_URL) {
        throw new Error(
          `SQL Server: MSSQL_URL (mssql://user:pass@host:1433/db) is not set; ${MSSQL_HINT}`,
        );
      }
      return MSSQL_ADMIN_URL;
  }
}

const uniqueName = () => `bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;

/**
 * Babelfish 4.3 (not SQL Server): `CREATE DATABASE` / `DROP DATABASE` while another connection
 * changes the catalog (another suite, a test run) can fail with PostgreSQL's "tuple concurrently
 * updated". Such an attempt changed nothing and is tried again after a random pause (as
 * test/support/databases.ts does); SQL Server serializes these statements itself.
 */
const CATALOG_RACE_ATTEMPTS = 20;
const isCatalogRace = (kind: BenchDatabaseKind, e: unknown) =>
  kind === 'mssql' && /tuple concurrently updated/.test(String((e as Error)?.message));
const catalogRacePause = () =>
  new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(Math.random() * 400)));

const CREATE: Record<Exclude<BenchDatabaseKind, 'sqlite'>, (name: string) => string> = {
  postgres: (name) => `CREATE DATABASE ${name}`,
  mariadb: (name) => `CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
  mssql: (name) => `CREATE DATABASE ${name}`,
};

/** Statements that drop the database; each is tried on its own (a failing one does not stop the next). */
const DROP: Record<Exclude<BenchDatabaseKind, 'sqlite'>, (name: string) => string[]> = {
  postgres: (name) => [`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`],
  mariadb: (name) => [`DROP DATABASE IF EXISTS ${name}`],
  // SQL Server: close other sessions first; Babelfish has no ALTER DATABASE (that one fails there).
  mssql: (name) => [
    `IF DB_ID('${name}') IS NOT NULL ALTER DATABASE ${name} SET SINGLE_USER WITH ROLLBACK IMMEDIATE`,
    `IF DB_ID('${name}') IS NOT NULL DROP DATABASE ${name}`,
  ],
};

/**
 * Creates a scratch database on loopback (PostgreSQL/MariaDB/SQL Server) or a temporary SQLite
 * file.
 */
export async function createScratchDatabase(kind: BenchDatabaseKind): Promise<ScratchDatabase> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'eo-bench-'));
    return {
      kind,
      url: `sqlite:${join(dir, 'bench.sqlite')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const admin = adminUrl(kind);
  let name = uniqueName();
  await withAdmin(admin, async (ds) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await ds.query(CREATE[kind](name));
      } catch (e) {
        if (attempt >= CATALOG_RACE_ATTEMPTS || !isCatalogRace(kind, e)) throw e;
        name = uniqueName(); // nothing of the failed attempt is reused
        await catalogRacePause();
      }
    }
  });
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return {
    kind,
    name,
    url: u.toString(),
    drop: () =>
      withAdmin(admin, async (ds) => {
        const statements = DROP[kind](name);
        for (const [i, statement] of statements.entries()) {
          for (let attempt = 1; ; attempt++) {
            try {
              await ds.query(statement);
              break;
            } catch (e) {
              if (attempt < CATALOG_RACE_ATTEMPTS && isCatalogRace(kind, e)) {
                await catalogRacePause();
                continue;
              }
              // The last statement is the drop itself: its failure is reported.
              if (i === statements.length - 1) throw e;
              break;
            }
          }
        }
      }),
  };
}

/** True when the server of that kind answers on loopback (SQLite: always; SQL Server: MSSQL_URL set). */
export async function isReachable(kind: BenchDatabaseKind): Promise<boolean> {
  if (kind === 'sqlite') return true;
  if (kind === 'mssql' && !MSSQL_ADMIN_URL) return false;
  try {
    await withAdmin(adminUrl(kind), (ds) => ds.query('SELECT 1'));
    return true;
  } catch {
    return false;
  }
}

/** Options of an admin connection: one connection, a short connect time-out, per driver. */
function adminOptions(url: string, connectTimeoutMs?: number): any {
  const o = databaseOptionsFromUrl(url) as any;
  switch (o.type) {
    case 'postgres':
      return {
        ...o,
        extra: { max: 1 },
        ...(connectTimeoutMs && { connectTimeoutMS: connectTimeoutMs }),
      };
    case 'mysql':
    case 'mariadb':
      return {
        ...o,
        extra: { connectionLimit: 1 },
        ...(connectTimeoutMs && { connectTimeout: connectTimeoutMs }),
      };
    case 'mssql':
      return {
        ...o,
        pool: { max: 1 },
        // Babelfish can take a while over a new connection's login and first batch.
        ...(connectTimeoutMs && { connectionTimeout: Math.max(connectTimeoutMs, 10_000) }),
      };
    default:
      return o;
  }
}

/** Runs `fn` on a short-lived admin connection to the server at `url`. */
export async function withAdmin<T>(url: string, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  const ds = new DataSource(adminOptions(url, 3000));
  await ds.initialize();
  try {
    return await fn(ds);
  } finally {
    await ds.destroy();
  }
}

/** A long-lived admin connection (e.g. to read pg_stat_activity between load slices). */
export async function openAdmin(kind: Exclude<BenchDatabaseKind, 'sqlite'>): Promise<DataSource> {
  const ds = new DataSource(adminOptions(adminUrl(kind)));
  await ds.initialize();
  return ds;
}
