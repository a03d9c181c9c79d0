import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource, QueryRunner } from 'typeorm';
import { DEFAULT_OPTIONS } from '../../lib/idempotency-options.resolver';
import { createDialect, type Dialect, type ReserveParams } from '../../lib/persistence/dialects';
import { executorFor } from '../../lib/persistence/sql-executor';
import { getIdempotencyMigrations } from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { DataSource as TypeOrmDataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  type TestDatabase,
  withPool,
} from '../support/databases';
import { sleep } from '../fixtures/gate/http';

/**
 * The ledger statements of each dialect, straight against the database (no HTTP): the atomic
 * reservation and its three outcomes, the lock wait bounded by lockTimeoutMs without leaving
 * anything on the pooled connection, the compare-and-set take-over and completion.
 * SQLite is left out of the lock cases: it has one writer and the library never lets two
 * transactions meet there (in-process serializer and in-flight registry, see gate-isolation).
 */
describe.each(databaseKinds())('idempotency ledger statements on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  /** A DataSource with a single pooled connection: what one statement leaves on it, the next one meets. */
  let single: DataSource;
  let dialect: Dialect;
  const serverDb = kind !== 'sqlite';

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    const options = databaseOptionsFromUrl(serverDb ? withPool(db.url, 1) : db.url);
    single = new TypeOrmDataSource({
      ...(options as any),
      migrations: getIdempotencyMigrations(),
      migrationsRun: true,
    });
    await single.initialize();
    ds = new TypeOrmDataSource({ ...(databaseOptionsFromUrl(db.url) as any) });
    await ds.initialize();
    dialect = await createDialect(ds, { tables: DEFAULT_OPTIONS.tables });
  });

  afterAll(async () => {
    await single?.destroy();
    await ds?.destroy();
    await db?.drop();
  });

  const params = (key: string, over: Partial<ReserveParams> = {}): ReserveParams => ({
    scope: 'tenant|-|POST /x',
    key,
    requestHash: randomBytes(32),
    leaseToken: randomUUID(),
    leaseMs: 60_000,
    ttlMs: 60_000,
    lockTimeoutMs: 100,
    ...over,
  });
  const sql = () => dialect.idempotency;
  const inTx = <T>(source: DataSource, fn: (exec: ReturnType<typeof executorFor>) => Promise<T>) =>
    source.transaction((manager) => fn(executorFor(manager)));
  /** Runs `fn` inside a transaction and tolerates the end of a transaction the server already aborted (Babelfish after a lock time-out). */
  const inTxTolerant = async <T>(
    source: DataSource,
    fn: (exec: ReturnType<typeof executorFor>) => Promise<T>,
  ) => {
    let result: T | undefined;
    await source
      .transaction(async (manager) => {
        result = await fn(executorFor(manager));
      })
      .catch((e) => {
        if (result === undefined) throw e;
      });
    return result as T;
  };
  async function openTransaction(source: DataSource): Promise<QueryRunner> {
    const qr = source.createQueryRunner();
    await qr.connect();
    await qr.startTransaction();
    return qr;
  }

  it('reserves a fresh key, then reports it as existing with the committed record', async () => {
    const key = randomUUID();
    const p = params(key);
    const first = await inTx(ds, (exec) => sql().reserve(exec, p));
    expect(first.outcome).toBe('inserted');
    const second = await inTx(ds, (exec) => sql().reserve(exec, params(key)));
    expect(second.outcome).toBe('exists');
    // PostgreSQL and SQL Server read the existing record in the reservation's own round trip.
    if (kind === 'postgres' || kind === 'mssql') {
      expect(second.outcome === 'exists' && second.row).toBeTruthy();
    }
    const row =
      (second.outcome === 'exists' && second.row) ||
      (await sql().find(executorFor(ds.manager), p.scope, key));
    expect(row).toMatchObject({ state: 'started', leaseToken: p.leaseToken, expired: false });
    expect(row!.requestHash.equals(p.requestHash)).toBe(true);
    expect(row!.leaseRemainingMs).toBeGreaterThan(50_000);
    expect(row!.leaseRemainingMs).toBeLessThanOrEqual(60_000);
  });

  it("sends every ledger statement through the DataSource's logger (query log, errors)", async () => {
    const logged: string[] = [];
    const failed: string[] = [];
    const logger = {
      logQuery: (q: string) => logged.push(q),
      logQueryError: (_e: unknown, q: string) => failed.push(q),
      logQuerySlow: () => undefined,
      logSchemaBuild: () => undefined,
      logMigration: () => undefined,
      log: () => undefined,
    };
    const watched = new TypeOrmDataSource({ ...(databaseOptionsFromUrl(db.url) as any), logger });
    await watched.initialize();
    try {
      const p = params(`logged-${randomUUID()}`);
      const r = await inTx(watched, (exec) => sql().reserve(exec, p));
      expect(r.outcome).toBe('inserted');
      const reserveLines = logged.filter((q) => q.includes(p.key) || /insert/i.test(q));
      expect(reserveLines.length).toBeGreaterThan(0);
      // A failing statement is reported as an error with its text.
      await expect(
        inTx(watched, (exec) => exec('SELECT * FROM no_such_table_eo')),
      ).rejects.toThrow();
      expect(failed.some((q) => q.includes('no_such_table_eo'))).toBe(true);
    } finally {
      await watched.destroy();
    }
  });

  it('keys and scopes are compared exactly (case and scope matter)', async () => {
    const key = `Key-${randomUUID()}`;
    expect((await inTx(ds, (exec) => sql().reserve(exec, params(key)))).outcome).toBe('inserted');
    expect((await inTx(ds, (exec) => sql().reserve(exec, params(key.toLowerCase())))).outcome).toBe(
      'inserted',
    );
    expect(
      (await inTx(ds, (exec) => sql().reserve(exec, params(key, { scope: 'other|-|POST /x' }))))
        .outcome,
    ).toBe('inserted');
  });

  if (serverDb) {
    it("answers 'locked' for a key held by an uncommitted reservation, without waiting for it to end", async () => {
      const key = randomUUID();
      const holder = await openTransaction(ds);
      try {
        expect((await sql().reserve(executorFor(holder.manager), params(key))).outcome).toBe(
          'inserted',
        );
        const dup = await inTxTolerant(single, (exec) => sql().reserve(exec, params(key)));
        expect(dup.outcome).toBe('locked');
        expect(holder.isTransactionActive).toBe(true); // the duplicate came back while the holder still ran
      } finally {
        await holder.rollbackTransaction();
        await holder.release();
      }
      // The holder rolled back (a crash does the same): the key is free.
      expect((await inTx(single, (exec) => sql().reserve(exec, params(key)))).outcome).toBe(
        'inserted',
      );
    });

    it('leaves the connection that met the lock with its normal lock wait', async () => {
      const key = randomUUID();
      expect((await inTx(ds, (exec) => sql().reserve(exec, params(key)))).outcome).toBe('inserted');
      const other = randomUUID();
      const holder = await openTransaction(ds);
      try {
        await sql().reserve(executorFor(holder.manager), params(other));
        // The single pooled connection meets the lock and gets 'locked'…
        expect(
          (await inTxTolerant(single, (exec) => sql().reserve(exec, params(other)))).outcome,
        ).toBe('locked');
        // …and its next statement waits for a row lock held longer than lockTimeoutMs, instead of failing.
        const row = await sql().find(executorFor(ds.manager), 'tenant|-|POST /x', key);
        await holder.query(
          `UPDATE idempotency_records SET lease_token = lease_token WHERE id = ${Number(row!.id)}`,
        );
        const released = sleep(600).then(() => holder.commitTransaction());
        await single.transaction((m) =>
          m.query(
            `UPDATE idempotency_records SET lease_token = lease_token WHERE id = ${Number(row!.id)}`,
          ),
        );
        await released;
      } finally {
        if (holder.isTransactionActive) await holder.rollbackTransaction();
        await holder.release();
      }
    });
  }

  it('lets exactly one of two take-overs of a lapsed lease win (compare-and-set on the token)', async () => {
    const key = randomUUID();
    const p = params(key, { leaseMs: 1 });
    await inTx(ds, (exec) => sql().reserve(exec, p));
    await sleep(30);
    const row = await sql().find(executorFor(ds.manager), p.scope, key);
    expect(row).toMatchObject({ state: 'started', leaseRemainingMs: 0 });
    const a = await inTx(ds, (exec) => sql().takeOver(exec, row!.id, row!.leaseToken, params(key)));
    const b = await inTx(ds, (exec) => sql().takeOver(exec, row!.id, row!.leaseToken, params(key)));
    expect([a, b].sort()).toEqual([false, true]);
  });

  it('does not take over a live lease, and takes over any expired record', async () => {
    const live = params(randomUUID());
    await inTx(ds, (exec) => sql().reserve(exec, live));
    const liveRow = await sql().find(executorFor(ds.manager), live.scope, live.key);
    expect(
      await inTx(ds, (exec) =>
        sql().takeOver(exec, liveRow!.id, liveRow!.leaseToken, params(live.key)),
      ),
    ).toBe(false);

    const old = params(randomUUID(), { ttlMs: 1 });
    await inTx(ds, (exec) => sql().reserve(exec, old));
    await sleep(30);
    const oldRow = await sql().find(executorFor(ds.manager), old.scope, old.key);
    expect(oldRow!.expired).toBe(true);
    expect(
      await inTx(ds, (exec) => sql().takeOver(exec, oldRow!.id, 'not-the-token', params(old.key))),
    ).toBe(true);
  });

  it('completes only with the lease token, and stores status, headers and body bytes', async () => {
    const p = params(randomUUID());
    const r = await inTx(ds, (exec) => sql().reserve(exec, p));
    const id = r.outcome === 'inserted' ? r.id : '';
    const body = Buffer.from([0, 1, 2, 254, 255]);
    const complete = (leaseToken: string) =>
      inTx(ds, (exec) =>
        sql().complete(exec, {
          id,
          leaseToken,
          status: 201,
          headers: '{"h":[]}',
          body,
          ttlMs: 60_000,
        }),
      );
    expect(await complete('someone-else')).toBe(false);
    expect(await complete(p.leaseToken)).toBe(true);
    expect(await complete(p.leaseToken)).toBe(false); // no longer started
    const row = await sql().find(executorFor(ds.manager), p.scope, p.key);
    expect(row).toMatchObject({
      state: 'completed',
      responseStatus: 201,
      responseHeaders: '{"h":[]}',
      leaseToken: null,
    });
    expect(row!.responseBody!.equals(body)).toBe(true);
  });

  it("completion in the reservation's own transaction keeps the reserved expiry on PostgreSQL (HOT update), sets it from completion elsewhere", async () => {
    const p = params(randomUUID(), { ttlMs: 60_000 });
    await inTx(ds, async (exec) => {
      const r = await sql().reserve(exec, p);
      expect(r.outcome).toBe('inserted');
      const ok = await sql().complete(exec, {
        id: r.outcome === 'inserted' ? r.id : '',
        leaseToken: p.leaseToken,
        status: 201,
        headers: '{"h":[]}',
        body: Buffer.from('{}'),
        ttlMs: 1,
        sameTransaction: true,
      });
      expect(ok).toBe(true);
    });
    await sleep(50);
    const row = await sql().find(executorFor(ds.manager), p.scope, p.key);
    expect(row!.state).toBe('completed');
    expect(row!.expired).toBe(kind !== 'postgres');
  });

  it('completion in another transaction (leased) keeps the record at least ttl from completion; PostgreSQL keeps a later reserved expiry', async () => {
    // Reserves, then completes in a transaction of its own (as leased mode does).
    const reserveThenComplete = async (reserveTtlMs: number, completeTtlMs: number) => {
      const p = params(randomUUID(), { ttlMs: reserveTtlMs });
      const r = await inTx(ds, (exec) => sql().reserve(exec, p));
      await inTx(ds, (exec) =>
        sql().complete(exec, {
          id: r.outcome === 'inserted' ? r.id : '',
          leaseToken: p.leaseToken,
          status: 201,
          headers: '{"h":[]}',
          body: Buffer.from('{}'),
          ttlMs: completeTtlMs,
        }),
      );
      return p;
    };
    // Reserved for a minute, completed with a 1 ms ttl: PostgreSQL keeps the later reserved
    // expiry (the completion leaves the indexed column as it is), other databases count from
    // completion.
    const long = await reserveThenComplete(60_000, 1);
    // Reserved for 1 ms, completed with a minute: a minute from completion everywhere.
    const short = await reserveThenComplete(1, 60_000);
    await sleep(50);
    const a = await sql().find(executorFor(ds.manager), long.scope, long.key);
    const b = await sql().find(executorFor(ds.manager), short.scope, short.key);
    expect(a!.state).toBe('completed');
    expect(a!.expired).toBe(kind !== 'postgres');
    expect(b!.state).toBe('completed');
    expect(b!.expired).toBe(false);
  });

  it('renews only our started reservation, from now on the database clock', async () => {
    const p = params(randomUUID(), { leaseMs: 200 });
    const r = await inTx(ds, (exec) => sql().reserve(exec, p));
    const id = r.outcome === 'inserted' ? r.id : '';
    await sleep(250); // the 200 ms lease has lapsed
    expect((await sql().find(executorFor(ds.manager), p.scope, p.key))!.leaseRemainingMs).toBe(0);
    expect(await sql().renew(executorFor(ds.manager), id, 'not-ours', 60_000)).toBe(false);
    expect(await sql().renew(executorFor(ds.manager), id, p.leaseToken, 60_000)).toBe(true);
    const renewed = await sql().find(executorFor(ds.manager), p.scope, p.key);
    expect(renewed!.leaseRemainingMs).toBeGreaterThan(50_000);
    await inTx(ds, (exec) =>
      sql().complete(exec, {
        id,
        leaseToken: p.leaseToken,
        status: 201,
        headers: '{"h":[]}',
        body: null,
        ttlMs: 60_000,
      }),
    );
    expect(await sql().renew(executorFor(ds.manager), id, p.leaseToken, 60_000)).toBe(false);
  });

  it('release deletes only our started reservation', async () => {
    const p = params(randomUUID());
    await inTx(ds, (exec) => sql().reserve(exec, p));
    const row = await sql().find(executorFor(ds.manager), p.scope, p.key);
    await inTx(ds, (exec) => sql().release(exec, row!.id, 'not-ours'));
    expect(await sql().find(executorFor(ds.manager), p.scope, p.key)).toBeDefined();
    await inTx(ds, (exec) => sql().release(exec, row!.id, p.leaseToken));
    expect(await sql().find(executorFor(ds.manager), p.scope, p.key)).toBeUndefined();
  });
});
