import type { DialectName } from '../dialects';
import {
  CONNECTION_DATABASE_MISSING,
  CONNECTION_HOST_MISSING,
  CONNECTION_URL_INVALID,
  CONNECTION_URL_MISSING,
} from './entities.messages';

/** URL schemes TypeORM's drivers take, per database (SQL Server takes host options). */
const URL_SCHEMES: Partial<Record<DialectName, string[]>> = {
  postgres: ['postgres:', 'postgresql:'],
  mysql: ['mysql:', 'mariadb:'],
};

const EXAMPLE_URL: Partial<Record<DialectName, string>> = {
  postgres: 'postgres://user:password@host:5432/database',
  mysql: 'mysql://user:password@host:3306/database',
};

const empty = (v: unknown) => v === undefined || v === null || v === '';

/**
 * The connection options `withExactlyOnce()` can tell are wrong before TypeORM tries them: a
 * `url` (or SQL Server `host`) read from an unset environment variable, which otherwise shows up
 * after TypeORM's ~30 s of connection retries as a driver error ("no PostgreSQL user name
 * specified in startup packet"), and a URL of another database. Options it cannot judge (the
 * driver's own environment variables, `replication`) are left to the driver.
 */
export function checkConnectionOptions(db: DialectName, options: Record<string, unknown>): void {
  const type = String(options.type);
  if (db === 'sqlite') {
    if ('database' in options && empty(options.database)) {
      throw new Error(CONNECTION_DATABASE_MISSING(type));
    }
    return;
  }
  if (options.replication) return;
  if ('url' in options && empty(options.url) && empty(options.host)) {
    throw new Error(
      CONNECTION_URL_MISSING(type, options.url, EXAMPLE_URL[db] ?? 'a connection URL'),
    );
  }
  if (db === 'mssql' && 'host' in options && empty(options.host) && empty(options.url)) {
    throw new Error(CONNECTION_HOST_MISSING(type));
  }
  const schemes = URL_SCHEMES[db];
  if (schemes && typeof options.url === 'string' && options.url !== '') {
    const scheme =
      /^[a-z][a-z0-9+.-]*:/i.exec(options.url)?.[0].toLowerCase() ?? options.url.slice(0, 12);
    if (!schemes.includes(scheme)) throw new Error(CONNECTION_URL_INVALID(type, scheme, schemes));
  }
}
