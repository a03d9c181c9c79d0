import type { INestApplication } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { baseUrl, startSampleApp } from '../support/sample-app';
import { ledgerRows, paymentCount, postJson } from '../fixtures/gate/http';
import { probePaymentInserts } from '../fixtures/gate/insert-probe';

/**
 * Concurrent requests never run inside each other's transactions. On SQLite (one connection,
 * one writer) this is the in-process serializer's job; on the server databases it is the
 * pool. A slow request that fails after its insert runs beside a fast one that succeeds: the
 * fast one's payment survives the slow one's rollback, the slow one leaves nothing, and a read
 * issued while the slow transaction is open never sees its uncommitted row.
 */
describe.each(databaseKinds())('transaction isolation of guarded requests on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;
  let probe: ReturnType<typeof probePaymentInserts>;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await startSampleApp(db.url, 'express');
    url = await baseUrl(app);
    ds = await openDataSource(db.url);
    probe = probePaymentInserts(app.get<DataSource>(getDataSourceToken()));
  });

  afterAll(async () => {
    await ds?.destroy();
    await app?.close();
    await db?.drop();
  });

  const body = (customerId: string) => ({ amount: 3, currency: 'USD', customerId });
  const list = async (customerId: string) =>
    (await (await fetch(`${url}/payments?customerId=${customerId}`)).json()) as unknown[];

  it.each(['transactional', 'leased'])(
    "a slow failing request never takes a fast one's committed row with it (%s mode)",
    async (mode) => {
      if (mode === 'leased') {
        await app.close();
        app = await startSampleApp(db.url, 'express', { IDEMPOTENCY_MODE: 'leased' });
        url = await baseUrl(app);
        probe = probePaymentInserts(app.get<DataSource>(getDataSourceToken()));
      }
      const slowKey = randomUUID();
      const fastKey = randomUUID();
      const slowCustomer = `slow-${randomUUID().slice(0, 8)}`;
      const fastCustomer = `fast-${randomUUID().slice(0, 8)}`;

      const slowInserted = probe.inserted(slowCustomer);
      const slow = postJson(`${url}/payments`, slowKey, body(slowCustomer), {
        'x-demo-delay-ms': '1200',
        'x-demo-fail': '500',
      });
      await slowInserted; // the slow request's payment row now exists, uncommitted, in its open transaction

      // Issued while that transaction is open: a read through the app, and a fast write.
      const readDuring = list(slowCustomer);
      const fast = postJson(`${url}/payments`, fastKey, body(fastCustomer));

      expect((await fast).status).toBe(201);
      expect(await readDuring).toEqual([]);
      expect((await slow).status).toBe(500);

      expect(await paymentCount(ds, kind, fastCustomer)).toBe(1);
      expect(await paymentCount(ds, kind, slowCustomer)).toBe(0);
      expect(await list(fastCustomer)).toHaveLength(1);
      expect(await ledgerRows(ds, kind, fastKey)).toEqual([
        expect.objectContaining({ state: 'completed' }),
      ]);
      expect(await ledgerRows(ds, kind, slowKey)).toHaveLength(0);

      // The failed request's key was released: its retry runs.
      const retry = await postJson(`${url}/payments`, slowKey, body(slowCustomer));
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotency-replayed')).toBeNull();
      expect(await paymentCount(ds, kind, slowCustomer)).toBe(1);
    },
  );
});
