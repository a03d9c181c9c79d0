import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
  withPool,
} from '../support/databases';
import {
  appSetupTimeoutMs,
  baseUrl,
  startSampleApp,
  warmSampleAppPool,
} from '../support/sample-app';
import { ledgerRows, paymentCount, postJson, sleep } from '../fixtures/gate/http';

/** Short, so that a lease left without renewals lapses well within the handlers' run. */
const LEASE_MS = 1500;
/** Each held request's handler sleeps this long after its insert, holding its transaction. */
const HOLD_MS = 6000;
/** Connections of app A's pool: as many as the held requests, so none is left for anything else. */
const POOL = 2;

/**
 * Leased mode with every connection of the pool held by handlers (slow external calls in their
 * transactions: leased mode's own use case). The leases of those live requests must still be
 * renewed, so a retry sent to another instance meanwhile gets 409, not a take-over that would run
 * the handler a second time. Server databases only: on SQLite one process answers every
 * duplicate itself and there is no renewal.
 */
describe.each(databaseKinds().filter((k) => k !== 'sqlite'))(
  'leased mode with a saturated pool on %s',
  (kind) => {
    let db: TestDatabase;
    let a: INestApplication;
    let b: INestApplication;
    let urlA: string;
    let urlB: string;
    let ds: DataSource;

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      const env = { IDEMPOTENCY_MODE: 'leased', IDEMPOTENCY_LEASE_MS: String(LEASE_MS) };
      a = await startSampleApp(withPool(db.url, POOL), 'express', env);
      b = await startSampleApp(db.url, 'express', env);
      urlA = await baseUrl(a);
      urlB = await baseUrl(b);
      ds = await openDataSource(db.url);
      await warmSampleAppPool(urlA, POOL);
      await warmSampleAppPool(urlB);
    }, appSetupTimeoutMs(kind));

    afterAll(async () => {
      await ds?.destroy();
      await a?.close();
      await b?.close();
      await db?.drop();
    }, appSetupTimeoutMs(kind));

    it('renews the leases of live requests that hold every pooled connection: a retry elsewhere gets 409, the handler runs once', async () => {
      const run = randomUUID().slice(0, 8);
      const held = Array.from({ length: POOL }, (_, i) => ({
        key: randomUUID(),
        payload: { amount: 10 + i, currency: 'USD', customerId: `held-${i}-${run}` },
      }));
      const answers = held.map((h) =>
        postJson(`${urlA}/payments`, h.key, h.payload, { 'X-Demo-Delay-Ms': String(HOLD_MS) }),
      );
      // Both reservations are committed and both handlers hold their connections (their inserts
      // are in, uncommitted): from here A's pool has nothing free.
      for (const h of held) {
        for (let i = 0; ; i++) {
          const rows = await ledgerRows(ds, kind, h.key);
          if (rows.some((r) => r.state === 'started')) break;
          if (i > 250) throw new Error(`the reservation of ${h.key} was never committed`);
          await sleep(20);
        }
      }
      // Well past the lease: without renewals both leases would have lapsed by now.
      await sleep(LEASE_MS * 2.5);
      const retries = await Promise.all(
        held.map((h) => postJson(`${urlB}/payments`, h.key, h.payload)),
      );
      expect(retries.map((r) => r.status)).toEqual(held.map(() => 409));

      const firsts = await Promise.all(answers);
      expect(firsts.map((r) => r.status)).toEqual(held.map(() => 201));
      for (const h of held) expect(await paymentCount(ds, kind, h.payload.customerId)).toBe(1);
      // And the retries now replay what the live requests answered.
      for (const [i, h] of held.entries()) {
        const again = await postJson(`${urlB}/payments`, h.key, h.payload);
        expect(again.status).toBe(201);
        expect(again.bytes.equals(firsts[i].bytes)).toBe(true);
      }
    }, 60_000);
  },
);
