import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { DataSourceOptions } from 'typeorm';

export const DEFAULT_DB_URL = 'sqlite:data/sample-app.sqlite';

/**
 * DB_URL → TypeORM options: `sqlite:<file>` (better-sqlite3, the embedded default),
 * `postgres://…`, `mysql://…` / `mariadb://…` (mysql2), `mssql://user:pass@host:port/db`.
 */
export function databaseOptionsFromUrl(url: string = DEFAULT_DB_URL): DataSourceOptions {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length) || 'data/sample-app.sqlite';
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
    return { type: 'better-sqlite3', database: file, enableWAL: true } as DataSourceOptions;
  }
  const u = new URL(url);
  const protocol = u.protocol.replace(/:$/, '');
  switch (protocol) {
    case 'postgres':
    case 'postgresql':
      return { type: 'postgres', url, extra: { max: Number(u.searchParams.get('pool') ?? 10) } };
    case 'mysql':
    case 'mariadb':
      return {
        type: protocol === 'mariadb' ? 'mariadb' : 'mysql',
        host: u.hostname,
        port: Number(u.port || 3306),
        username: decodeURIComponent(u.username),
        password: decodeURIComponent(u.password),
        database: u.pathname.slice(1),
        timezone: 'Z',
        supportBigNumbers: true,
        bigNumberStrings: true,
        extra: { connectionLimit: Number(u.searchParams.get('pool') ?? 10) },
      } as DataSourceOptions;
    case 'mssql':
    case 'sqlserver':
      return {
        type: 'mssql',
        host: u.hostname,
        port: Number(u.port || 1433),
        username: decodeURIComponent(u.username),
        password: decodeURIComponent(u.password),
        database: u.pathname.slice(1) || undefined,
        options: {
          encrypt: u.searchParams.get('encrypt') === 'true',
          trustServerCertificate: u.searchParams.get('trustServerCertificate') !== 'false',
          // Large TDS packets: a statement or stored response over one 4 KB packet otherwise
          // waits on Nagle's algorithm (tedious leaves it on), ~40 ms per crossing.
          packetSize: Number(u.searchParams.get('packetSize') ?? 32767),
        },
        pool: { max: Number(u.searchParams.get('pool') ?? 10) },
      } as DataSourceOptions;
    default:
      throw new Error(
        `DB_URL: unsupported database "${protocol}" (use sqlite:, postgres://, mysql://, mariadb:// or mssql://)`,
      );
  }
}
