import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import { dataSourceOptionsFromUrl } from '../../lib/cli/database-url';

export const DEFAULT_DB_URL = 'sqlite:data/sample-app.sqlite';

/**
 * DB_URL → TypeORM options: `sqlite:<file>` (better-sqlite3, the embedded default),
 * `postgres://…`, `mysql://…` / `mariadb://…` (mysql2), `mssql://user:pass@host:port/db`: the
 * forms the library's CLI (`nestjs-exactly-once schema … --url`) accepts too.
 */
export function databaseOptionsFromUrl(url: string = DEFAULT_DB_URL): DataSourceOptions {
  if (url === 'sqlite:') url = DEFAULT_DB_URL;
  const options = dataSourceOptionsFromUrl(url, 'DB_URL');
  if (options.type === 'better-sqlite3' && options.database !== ':memory:') {
    mkdirSync(dirname(resolve(options.database)), { recursive: true });
  }
  return options;
}
