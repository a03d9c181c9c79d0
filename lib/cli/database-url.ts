import type { DataSourceOptions } from 'typeorm';
import { UNSUPPORTED_URL } from './cli.messages';

/**
 * A database URL → TypeORM options: `sqlite:<file>` (better-sqlite3), `postgres://…` /
 * `postgresql://…`, `mysql://…` / `mariadb://…` (mysql2), `mssql://user:pass@host:port/db` /
 * `sqlserver://…` (tedious; `?encrypt=true`, `?trustServerCertificate=false`, `?packetSize=`).
 * `?pool=N` sizes the pool. The same forms the sample app's DB_URL accepts. `label` names the
 * setting in errors (DB_URL, --url).
 */
export function dataSourceOptionsFromUrl(url: string, label = 'URL'): DataSourceOptions {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length);
    if (!file) throw new Error(UNSUPPORTED_URL(label, url));
    return { type: 'better-sqlite3', database: file, enableWAL: true } as DataSourceOptions;
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(UNSUPPORTED_URL(label, url));
  }
  const protocol = u.protocol.replace(/:$/, '');
  const pool = Number(u.searchParams.get('pool') ?? 10);
  switch (protocol) {
    case 'postgres':
    case 'postgresql':
      return { type: 'postgres', url, extra: { max: pool } };
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
        extra: { connectionLimit: pool },
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
        pool: { max: pool },
      } as DataSourceOptions;
    default:
      throw new Error(UNSUPPORTED_URL(label, url));
  }
}

/** The URL with its password replaced, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}
