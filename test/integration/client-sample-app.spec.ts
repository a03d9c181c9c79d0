import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { createIdempotentFetch, type FetchLike, type RetryEvent } from '../../lib/client';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import {
  appSetupTimeoutMs,
  baseUrl,
  startSampleApp,
  warmSampleAppPool,
} from '../support/sample-app';

const modes = ['transactional', 'leased'] as const;
const cases = databaseKinds().flatMap((db) => modes.map((m) => [db, m] as const));
const MAX_DELAY_MS = 800;

async function eventually<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * createIdempotentFetch against the real sample app (POST /payments, in-process, Express) on every
 * database, in both gate modes: the client's time-outs, the server's 409 while the first attempt
 * runs, replays, and 4xx answers returned at once. The server is slowed by the sample app's
 * `X-Demo-Delay-Ms` switch (a sleep after the payment's insert, inside its transaction).
 */
describe.each(cases)(
  'createIdempotentFetch against the sample app on %s (%s mode)',
  (kind, mode) => {
    let db: TestDatabase;
    let app: INestApplication;
    let url: string;

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      app = await startSampleApp(db.url, 'express', { IDEMPOTENCY_MODE: mode });
      url = await baseUrl(app);
      // Attempts of 300 ms must meet the gate, not a cold Babelfish connection's late first batch.
      await warmSampleAppPool(url);
    }, appSetupTimeoutMs(kind));

    afterAll(async () => {
      await app?.close();
      await db?.drop();
    }, appSetupTimeoutMs(kind));

    /** A client whose attempts go through the real fetch and are recorded (key of each attempt). */
    function recordedClient(timeoutMs: number) {
      const keys: (string | null)[] = [];
      const events: RetryEvent[] = [];
      const recording: FetchLike = (input, init) => {
        keys.push(new Headers(init?.headers).get('idempotency-key'));
        return fetch(input, init);
      };
      const client = createIdempotentFetch({
        fetch: recording,
        timeoutMs,
        maxAttempts: 20,
        baseDelayMs: 50,
        maxDelayMs: MAX_DELAY_MS,
        onRetry: (e) => events.push(e),
      });
      return { client, keys, events };
    }

    const pay = (client: FetchLike, customerId: string, headers: Record<string, string> = {}) =>
      client(`${url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ amount: 25, currency: 'EUR', customerId }),
      });

    const paymentsOf = async (customerId: string) =>
      (await (await fetch(`${url}/payments?customerId=${customerId}`)).json()) as { id: string }[];

    const ledgerOf = async (paymentId: string) =>
      (await (await fetch(`${url}/ledger?paymentId=${paymentId}`)).json()) as unknown[];

    const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

    it('first attempt times out on the client while the server completes it: one payment, the retry gets the first answer replayed', async () => {
      const { client, keys, events } = recordedClient(300);
      const customerId = customer('timeout');
      const r = await pay(client, customerId, { 'x-demo-delay-ms': '1500' });

      expect(r.status).toBe(201);
      expect(r.headers.get('idempotency-replayed')).toBe('true');
      const answer = (await r.json()) as { id: string; customerId: string };
      expect(answer.customerId).toBe(customerId);
      expect(events[0]).toMatchObject({ attempt: 1, reason: 'timeout' });
      expect(keys.length).toBeGreaterThanOrEqual(2);
      expect(new Set(keys)).toEqual(new Set([keys[0]]));
      expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);

      const payments = await paymentsOf(customerId);
      expect(payments.map((p) => p.id)).toEqual([answer.id]);
      expect(r.headers.get('location')).toBe(`/payments/${answer.id}`);
      const ledger = await eventually(async () => {
        const rows = await ledgerOf(answer.id);
        return rows.length > 0 ? rows : undefined;
      }, 'the ledger entry of the payment');
      expect(ledger).toHaveLength(1);
    });

    it('a 409 of a duplicate still in progress is retried until the replay arrives', async () => {
      // A double click: two calls with one key, the first one slow. Whichever reaches the gate
      // first runs; the other meets it in progress (409), waits and gets its answer replayed.
      const key = randomUUID();
      const customerId = customer('dup');
      const a = recordedClient(10_000);
      const b = recordedClient(10_000);
      const headers = { 'idempotency-key': key, 'x-demo-delay-ms': '2500' };
      const [ra, rb] = await Promise.all([
        pay(a.client, customerId, headers),
        pay(b.client, customerId, headers),
      ]);

      expect([ra.status, rb.status]).toEqual([201, 201]);
      const [ja, jb] = (await Promise.all([ra.json(), rb.json()])) as { id: string }[];
      expect(ja.id).toBe(jb.id);
      const replayed = [ra, rb].map((r) => r.headers.get('idempotency-replayed'));
      expect([...replayed].sort()).toEqual(['true', null].sort()); // a copy: sort() mutates
      const waiter = replayed[0] === 'true' ? a : b;
      const runner = waiter === a ? b : a;
      const seen = (c: typeof a) =>
        c.events.map((e) => `${e.reason}:${e.status ?? String(e.error)}`);
      // The waiter met the running attempt (409 in progress) at least once. Neither call timed
      // out or lost its connection; a 503 (database busy: nothing committed) is the only other
      // answer the contract allows on the way.
      expect({
        waiter: seen(waiter).includes('in-progress:409'),
        runner: seen(runner).filter((e) => e !== 'status:503'),
      }).toEqual({ waiter: true, runner: [] });
      for (const e of waiter.events) {
        expect(['in-progress:409', 'status:503']).toContain(`${e.reason}:${e.status}`);
        expect(e.key).toBe(key);
        expect(e.delayMs).toBeLessThanOrEqual(MAX_DELAY_MS);
      }
      expect(new Set([...a.keys, ...b.keys])).toEqual(new Set([key]));
      expect((await paymentsOf(customerId)).map((p) => p.id)).toEqual([ja.id]);
    });

    it('a 422 (key reused with another payload) and a 400 (invalid body) are returned at once', async () => {
      const key = randomUUID();
      const customerId = customer('reuse');
      const first = recordedClient(10_000);
      expect((await pay(first.client, customerId, { 'idempotency-key': key })).status).toBe(201);

      const other = recordedClient(10_000);
      const r = await pay(other.client, `${customerId}-other`, { 'idempotency-key': key });
      expect(r.status).toBe(422);
      expect(((await r.json()) as { type: string }).type).toBe(
        'urn:nestjs-exactly-once:problem:idempotency-key-reused',
      );
      expect(other.keys).toEqual([key]);
      expect(other.events).toEqual([]);

      const invalid = recordedClient(10_000);
      const bad = await invalid.client(`${url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ amount: -1, currency: 'EUR', customerId }),
      });
      expect(bad.status).toBe(400);
      expect(invalid.keys).toHaveLength(1);
      expect(invalid.events).toEqual([]);
      expect(await paymentsOf(customerId)).toHaveLength(1);
      expect(await paymentsOf(`${customerId}-other`)).toHaveLength(0);
    });
  },
);
