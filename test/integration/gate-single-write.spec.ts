import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { DEFAULT_OPTIONS } from '../../lib/idempotency-options.resolver';
import { buildScope } from '../../lib/gate/request-scope';
import { requestFingerprint } from '../../lib/gate/request-fingerprint';
import { encodeSnapshot } from '../../lib/gate/response-snapshot';
import { createDialect } from '../../lib/persistence/dialects';
import { executorFor } from '../../lib/persistence/sql-executor';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { baseUrl } from '../support/sample-app';
import { GateOptionsController, raceHook } from '../fixtures/gate/gate-options.controller';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import { paymentCount, postJson, sleep } from '../fixtures/gate/http';

/**
 * Issue #15: in transactional mode a first execution writes its ledger record ONCE (PostgreSQL:
 * the key's transaction-scoped lock and its record are read in one statement, the
 * completed record is inserted at the end), and a record committed by someone else while we held
 * the lock (after our read, before our insert) wins: our transaction rolls back and the client
 * gets that record's answer. Where the dialect keeps reserve-then-complete (SQL Server,
 * MySQL/MariaDB, SQLite), the same requests behave the same.
 */
describe.each(databaseKinds())('Single-write ledger (transactional mode) on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;
  let singleWrite = false;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await startGateFixture({
      dbUrl: db.url,
      platform: 'express',
      controllers: [GateOptionsController],
    });
    url = `${await baseUrl(app)}/gate-options`;
    ds = await openDataSource(db.url);
    const dialect = await createDialect(ds, { tables: DEFAULT_OPTIONS.tables });
    singleWrite = !!dialect.idempotency.singleWrite;
  });

  afterAll(async () => {
    raceHook.run = undefined;
    await ds?.destroy();
    await app?.close();
    await db?.drop();
  });

  const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

  it('PostgreSQL writes the record once; the others reserve then complete', () => {
    expect(singleWrite).toBe(kind === 'postgres');
  });

  if (kind === 'postgres') {
    // First in this file: the table's counters then hold no other request's statements.
    it('PostgreSQL: N first executions insert N ledger rows and update none', async () => {
      const stats = async () =>
        (
          await ds.query(
            `SELECT n_tup_ins::int AS ins, n_tup_upd::int AS upd FROM pg_stat_user_tables WHERE relname = 'idempotency_records'`,
          )
        )[0] as { ins: number; upd: number };
      await ds.query('SELECT pg_stat_clear_snapshot()');
      const before = await stats();
      const n = 20;
      for (let i = 0; i < n; i++) {
        expect(
          (await postJson(`${url}/plain`, randomUUID(), { customerId: customer('n') })).status,
        ).toBe(201);
      }
      // The app's backends report their counters shortly after their transactions end.
      let after = before;
      for (let i = 0; i < 100 && after.ins - before.ins < n; i++) {
        await sleep(100);
        await ds.query('SELECT pg_stat_clear_snapshot()');
        after = await stats();
      }
      expect(after.ins - before.ins).toBe(n);
      expect(after.upd - before.upd).toBe(0);
    });

    it('PostgreSQL: a warm first execution is three round trips (START TRANSACTION with the claim, COMMIT with the completed record)', async () => {
      const appDs = app.get(DataSource);
      const pool = (appDs.driver as any).master;
      const Client = (appDs.driver as any).postgres.Client;
      const query = Client.prototype.query;
      let trips = 0;
      Client.prototype.query = function (this: unknown, ...args: unknown[]) {
        if (pool._clients.includes(this)) trips++;
        return query.apply(this, args);
      };
      try {
        // Sequential requests: the pool hands out its most recently used connection, whose
        // statements the requests above have prepared.
        const counts: number[] = [];
        for (let i = 0; i < 5; i++) {
          const before = trips;
          const c = customer('trips');
          expect((await postJson(`${url}/plain`, randomUUID(), { customerId: c })).status).toBe(
            201,
          );
          counts.push(trips - before);
          expect(await paymentCount(ds, kind, c)).toBe(1);
        }
        expect(counts).toEqual([3, 3, 3, 3, 3]);
      } finally {
        Client.prototype.query = query;
      }
    });

    it("a record committed while the handler holds the key wins; the handler's writes roll back and the client gets that answer", async () => {
      const key = randomUUID();
      const c = customer('race');
      const body = { customerId: c, amount: 5 };
      const scope = buildScope('-', '-', 'POST', '/gate-options/race');
      const requestHash = requestFingerprint({
        method: 'POST',
        route: '/gate-options/race',
        query: '',
        headers: [],
        contentType: 'application/json',
        body,
        rawBody: undefined,
        excludeBodyPaths: new Set(),
      });
      const racing = Buffer.from(JSON.stringify({ id: 'committed-elsewhere', customerId: c }));
      const dialect = await createDialect(ds, { tables: DEFAULT_OPTIONS.tables });
      raceHook.run = async (customerId) => {
        if (customerId !== c) return;
        // Another connection commits the completed record of this very request (a retry that
        // read the key before our claim, as the statement's snapshot allows) while we hold the lock.
        const encoded = encodeSnapshot({
          status: 201,
          headers: [['content-type', 'application/json; charset=utf-8']],
          body: racing,
        });
        const inserted = await dialect.idempotency.singleWrite!.insertCompleted(
          executorFor(ds.manager),
          {
            scope,
            key,
            requestHash,
            status: 201,
            headers: encoded.headers,
            body: encoded.body,
            ttlMs: 60_000,
          },
        );
        if (!inserted) throw new Error('the racing record was not planted');
      };
      try {
        const r = await postJson(`${url}/race`, key, body);
        expect(r.status).toBe(201);
        expect(r.headers.get('idempotency-replayed')).toBe('true');
        expect(r.bytes.equals(racing)).toBe(true);
      } finally {
        raceHook.run = undefined;
      }
      // The handler's payment went with the rollback: one effect, the committed one's.
      expect(await paymentCount(ds, kind, c)).toBe(0);
      const again = await postJson(`${url}/race`, key, body);
      expect(again.bytes.equals(racing)).toBe(true);
      expect(await paymentCount(ds, kind, c)).toBe(0);
    });
  }
  it('a first execution leaves one completed record, and retries replay it', async () => {
    const key = randomUUID();
    const c = customer('once');
    const first = await postJson(`${url}/plain`, key, { customerId: c });
    expect(first.status).toBe(201);
    const rows = await ds.query(
      `SELECT state, response_status FROM idempotency_records WHERE idempotency_key = ${kind === 'postgres' ? '$1' : kind === 'mssql' ? '@0' : '?'}`,
      [key],
    );
    expect(rows).toEqual([{ state: 'completed', response_status: 201 }]);
    const again = await postJson(`${url}/plain`, key, { customerId: c });
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(await paymentCount(ds, kind, c)).toBe(1);
  });
});
