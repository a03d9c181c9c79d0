import { DataSource } from 'typeorm';
import {
  LeaseRenewalConnection,
  renewalOptions,
} from '../../lib/persistence/lease-renewal.connection';
import { RENEWAL_CONNECTION_CLOSED } from '../../lib/persistence/persistence.messages';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
  withPool,
} from '../support/databases';

describe('renewalOptions', () => {
  it('keeps the connection settings, drops the schema, and sizes each driver pool to one connection never closed for being idle', () => {
    const pg = renewalOptions({
      type: 'postgres',
      url: 'postgres://u@h/db',
      applicationName: 'payments',
      entities: [class A {}],
      migrations: ['m.js'],
      migrationsRun: true,
      extra: { max: 20, ssl: { rejectUnauthorized: false } },
    }) as any;
    expect(pg).toMatchObject({
      type: 'postgres',
      url: 'postgres://u@h/db',
      applicationName: 'payments',
      entities: [],
      migrations: [],
      migrationsRun: false,
      synchronize: false,
      poolSize: 1,
      extra: { max: 1, idleTimeoutMillis: 0, ssl: { rejectUnauthorized: false } },
    });
    expect(
      (renewalOptions({ type: 'postgres', extra: { idleTimeoutMillis: 200 } }) as any).extra,
    ).toEqual({ max: 1, idleTimeoutMillis: 0 });
    expect(
      (renewalOptions({ type: 'mariadb', extra: { connectionLimit: 10 } }) as any).extra,
    ).toEqual({ connectionLimit: 1 });
    expect(
      (
        renewalOptions({
          type: 'mysql',
          extra: { connectionLimit: 10, maxIdle: 0, idleTimeout: 200 },
        }) as any
      ).extra,
    ).toEqual({ connectionLimit: 1, maxIdle: 1, idleTimeout: 200 });
    expect(
      (
        renewalOptions({
          type: 'mssql',
          pool: { max: 10, min: 2, idleTimeoutMillis: 5 },
        } as any) as any
      ).pool,
    ).toEqual({ max: 1, min: 1, idleTimeoutMillis: 5 });
  });
});

/** The renewal connection on each server database: a DataSource of its own, closed at shutdown. */
describe.each(databaseKinds().filter((k) => k !== 'sqlite'))(
  'lease renewal connection on %s',
  (kind) => {
    let db: TestDatabase;
    let app: DataSource;

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      app = await openDataSource(db.url);
    }, 60_000);

    afterAll(async () => {
      await app?.destroy();
      await db?.drop();
    }, 60_000);

    it('runs statements beside the app pool, even when that pool is exhausted, and refuses after close()', async () => {
      // The app's pool: one connection, held by an open transaction for the whole test.
      const options = databaseOptionsFromUrl(withPool(db.url, 1));
      const small = new DataSource(options);
      await small.initialize();
      const holder = small.createQueryRunner();
      await holder.connect();
      await holder.startTransaction();
      try {
        const renewals = new LeaseRenewalConnection(
          () => small,
          () => undefined,
        );
        renewals.warm();
        const exec = await renewals.executor();
        const { rows } = await exec('SELECT 1 AS one');
        expect(Number(rows[0].one)).toBe(1);
        await renewals.close();
        await expect(renewals.executor()).rejects.toThrow(RENEWAL_CONNECTION_CLOSED);
      } finally {
        await holder.rollbackTransaction();
        await holder.release();
        await small.destroy();
      }
    }, 60_000);

    it('keeps its one connection open while idle, whatever idle time-out the app sets for its own pool', async () => {
      // The app's pool closes idle connections after 200 ms (and keeps none).
      const options = databaseOptionsFromUrl(withPool(db.url, 2)) as any;
      if (kind === 'postgres') options.extra = { ...options.extra, idleTimeoutMillis: 200 };
      else if (kind === 'mariadb') {
        options.extra = { ...options.extra, idleTimeout: 200, maxIdle: 0 };
      } else options.pool = { ...options.pool, min: 0, idleTimeoutMillis: 200 };
      const small = new DataSource(options);
      await small.initialize();
      const renewals = new LeaseRenewalConnection(
        () => small,
        () => undefined,
      );
      const sessionSql =
        kind === 'postgres'
          ? 'SELECT pg_backend_pid() AS id'
          : kind === 'mariadb'
            ? 'SELECT CONNECTION_ID() AS id'
            : 'SELECT @@SPID AS id';
      try {
        const session = async () =>
          String((await (await renewals.executor())(sessionSql)).rows[0].id);
        const before = await session();
        // Idle for several of the app's idle time-outs (tarn reaps once a second).
        await new Promise((r) => setTimeout(r, 2500));
        expect(await session()).toBe(before);
      } finally {
        await renewals.close();
        await small.destroy();
      }
    }, 60_000);
  },
);
