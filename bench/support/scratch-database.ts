import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';

export type BenchDatabaseKind = 'postgres' | 'sqlite' | 'mariadb';

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

const uniqueName = () => `bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;

/** Creates a scratch database on loopback (PostgreSQL/MariaDB) or a temporary SQLite file. */
export async function createScratchDatabase(kind: BenchDatabaseKind): Promise<ScratchDatabase> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'eo-bench-'));
    return {
      kind,
      url: `sqlite:${join(dir, 'bench.sqlite')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const adminUrl = kind === 'postgres' ? PG_ADMIN_URL : MARIADB_ADMIN_URL;
  const name = uniqueName();
  await withAdmin(adminUrl, (ds) =>
    ds.query(
      kind === 'postgres'
        ? `CREATE DATABASE ${name}`
        : `CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
    ),
  );
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    kind,
    name,
    url: u.toString(),
    drop: () =>
      withAdmin(adminUrl, (ds) =>
        ds.query(
          kind === 'postgres'
            ? `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`
            : `DROP DATABASE IF EXISTS ${name}`,
        ),
      ),
  };
}

/** True when the server of that kind answers on loopback (SQLite: always). */
export async function isReachable(kind: BenchDatabaseKind): Promise<boolean> {
  if (kind === 'sqlite') return true;
  try {
    await withAdmin(kind === 'postgres' ? PG_ADMIN_URL : MARIADB_ADMIN_URL, (ds) =>
      ds.query('SELECT 1'),
    );
    return true;
  } catch {
    return false;
  }
}

/** Runs `fn` on a short-lived admin connection to the server at `url`. */
export async function withAdmin<T>(url: string, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  const ds = new DataSource({
    ...(databaseOptionsFromUrl(url) as any),
    connectTimeoutMS: 3000,
    connectTimeout: 3000,
    extra: { max: 1, connectionLimit: 1 },
  });
  await ds.initialize();
  try {
    return await fn(ds);
  } finally {
    await ds.destroy();
  }
}

/** A long-lived admin connection (e.g. to read pg_stat_activity between load slices). */
export async function openAdmin(kind: Exclude<BenchDatabaseKind, 'sqlite'>): Promise<DataSource> {
  const url = kind === 'postgres' ? PG_ADMIN_URL : MARIADB_ADMIN_URL;
  const ds = new DataSource({
    ...(databaseOptionsFromUrl(url) as any),
    extra: { max: 1, connectionLimit: 1 },
  });
  await ds.initialize();
  return ds;
}
