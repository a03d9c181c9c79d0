import type { DataSourceOptions } from 'typeorm';
import { withExactlyOnce } from '../../lib';

/**
 * withExactlyOnce() refuses connection options that cannot work, at once and naming the fix,
 * instead of TypeORM's ~30 s of retries ending in a driver error ("no PostgreSQL user name
 * specified in startup packet" for a postgres url read from an unset DATABASE_URL).
 */
describe('withExactlyOnce() connection options', () => {
  const call = (o: Record<string, unknown>) => () =>
    withExactlyOnce(o as unknown as DataSourceOptions);

  it.each([
    ['postgres', 'postgres://user:password@host:5432/database'],
    ['mariadb', 'mysql://user:password@host:3306/database'],
    ['mysql', 'mysql://user:password@host:3306/database'],
  ])(
    '%s with url: process.env.DATABASE_URL unset: names DATABASE_URL and the URL form',
    (type, example) => {
      expect(call({ type, url: undefined })).toThrow(
        `nestjs-exactly-once: withExactlyOnce() got ${type} options with url undefined and no host, so there is nothing to connect to: is the environment variable it is read from (e.g. DATABASE_URL) set? Set it to ${example}, or pass host, port, username, password and database.`,
      );
      expect(call({ type, url: '' })).toThrow(/with url '' and no host/);
    },
  );

  it('mssql with host: process.env.DB_HOST unset: names DB_HOST', () => {
    expect(call({ type: 'mssql', host: undefined, database: 'x' })).toThrow(
      /mssql options with an empty host and no url.*\(e\.g\. DB_HOST\) set\?/,
    );
  });

  it('better-sqlite3 / sqlite without a database file: names DATABASE_FILE', () => {
    for (const type of ['better-sqlite3', 'sqlite']) {
      expect(call({ type, database: undefined })).toThrow(
        new RegExp(`${type} options without a database file.*DATABASE_FILE`),
      );
    }
  });

  it('a URL of another database: names the scheme the type takes', () => {
    expect(call({ type: 'postgres', url: 'mysql://u:p@h:3306/d' })).toThrow(
      `nestjs-exactly-once: withExactlyOnce() got a postgres url starting with "mysql:" instead of postgres:// or postgresql://: the URL is for another database, or the DataSource type is wrong. Use postgres://user:password@host:port/database with type 'postgres'.`,
    );
    expect(call({ type: 'mariadb', url: 'postgres://u@h/d' })).toThrow(
      /instead of mysql:\/\/ or mariadb:\/\//,
    );
    expect(call({ type: 'postgres', url: '127.0.0.1:5432' })).toThrow(
      /starting with "127.0.0.1:54"/,
    );
  });

  it('a wrong or missing type: names the supported ones', () => {
    expect(call({ type: 'postgress', url: 'postgres://h/d' })).toThrow(
      /got the DataSource type "postgress".*mssql, postgres, mysql, mariadb, better-sqlite3 or sqlite/,
    );
    expect(call({ url: 'postgres://h/d' })).toThrow(/needs the DataSource type/);
  });

  it('accepts what can work: a url, host options, the driver environment (no url key), replication', () => {
    for (const o of [
      { type: 'postgres', url: 'postgres://user@127.0.0.1:5432/db' },
      { type: 'postgres', url: 'postgresql://user@127.0.0.1/db' },
      { type: 'postgres', url: undefined, host: 'db.internal' },
      { type: 'postgres' },
      { type: 'mariadb', url: 'mariadb://root@127.0.0.1/db' },
      { type: 'mssql', host: 'sql.internal', database: 'x' },
      { type: 'postgres', url: undefined, replication: { master: { host: 'a' }, slaves: [] } },
      { type: 'better-sqlite3', database: ':memory:' },
    ]) {
      expect(call(o)).not.toThrow();
    }
  });
});
