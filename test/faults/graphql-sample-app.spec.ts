import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  closeTestDatabase,
  databaseKinds,
  openTestDatabase,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';
import { postJson } from '../fixtures/gate/http';

/**
 * The sample app's `POST /graphql` mutation `createPayment`, guarded by `@Idempotent()`, in real
 * processes on Express (Apollo) and Fastify (Mercurius): a process killed (SIGKILL) in the
 * resolver, before its transaction commits, leaves the key free, and the retry on a new process
 * makes ONE payment and ONE outbox event; a retry gets the same payment; another input with the
 * key gets IDEMPOTENCY_KEY_REUSED; the same key on `POST /payments` is another request.
 */
const MUTATION = /* GraphQL */ `
  mutation Pay($input: CreatePaymentInput!) {
    createPayment(input: $input) {
      id
      amount
      currency
      customerId
      status
    }
  }
`;

describe.each(databaseKinds())('createPayment over GraphQL, sample app on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, ds } = await openTestDatabase(kind));
  }, 300_000);

  afterAll(() => closeTestDatabase({ ds, db }));

  const count = async (sql: string, value: string): Promise<number> =>
    (await ds.query(sql.replace('?', placeholder(kind, 0)), [value])).length;
  const payments = (customerId: string) =>
    count('SELECT id FROM payments WHERE customer_id = ?', customerId);
  const events = (paymentId: string) =>
    count('SELECT id FROM outbox_messages WHERE partition_key = ?', paymentId);

  describe.each(['express', 'fastify'] as const)('%s', (platform) => {
    const apps: AppProcess[] = [];
    const start = async (faults?: string) => {
      const app = await spawnSampleApp({
        DB_URL: db.url,
        HTTP_PLATFORM: platform,
        GRAPHQL_ON_FASTIFY: 'true',
        // Not Jest's 'test': Apollo hides stack traces by itself in test and production only.
        NODE_ENV: 'development',
        ...(faults ? { EO_TEST_FAULTS: faults } : {}),
      });
      apps.push(app);
      return app;
    };

    afterAll(async () => {
      for (const app of apps) await app.kill('SIGKILL');
    });

    const post = async (url: string, input: object, key: string, ms = 15_000) => {
      const r = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ query: MUTATION, variables: { input } }),
        signal: AbortSignal.timeout(ms),
      });
      return {
        body: (await r.json()) as { data?: any; errors?: any[] },
        replayed: r.headers.get('idempotency-replayed'),
      };
    };

    /** Posts until answered, as a careful client does: backs off while the key is in use. */
    const postUntilAnswered = async (url: string, input: object, key: string) => {
      for (let attempt = 0; ; attempt++) {
        const a = await post(url, input, key);
        const ext = a.body.errors?.[0]?.extensions;
        if (!ext?.retryable || attempt >= 10) return a;
        await new Promise((r) => setTimeout(r, 1000 * Math.max(1, ext.retryAfter ?? 1)));
      }
    };

    it('SIGKILL in the resolver, then the retry on a new process: one payment, one event', async () => {
      const victim = await start('payments.in-handler');
      const customerId = `gql-kill-${randomUUID().slice(0, 8)}`;
      const key = randomUUID();
      const input = { amount: 7, currency: 'EUR', customerId };
      const died = new Promise<void>((r) => victim.child.once('exit', () => r()));
      await expect(post(victim.url, input, key, 5_000)).rejects.toBeDefined();
      await died;
      expect(victim.output()).toContain('fault point payments.in-handler reached');
      expect(await payments(customerId)).toBe(0);
      const next = await start();
      const first = await postUntilAnswered(next.url, input, key);
      expect(first.body.errors).toBeUndefined();
      const payment = first.body.data.createPayment;
      expect(payment).toMatchObject({ ...input, status: 'captured', id: expect.any(String) });
      const again = await post(next.url, input, key);
      expect(again.body.data.createPayment).toEqual(payment);
      expect(again.replayed).toBe('true');
      expect(await payments(customerId)).toBe(1);
      expect(await events(payment.id)).toBe(1);
    });

    it('another amount with the key: IDEMPOTENCY_KEY_REUSED (422); the key on POST /payments is another request', async () => {
      const url = apps[apps.length - 1].url;
      const customerId = `gql-${randomUUID().slice(0, 8)}`;
      const key = randomUUID();
      const input = { amount: 12.5, currency: 'EUR', customerId };
      const first = await postUntilAnswered(url, input, key);
      const reused = await post(url, { ...input, amount: 13 }, key);
      expect(reused.body.errors?.[0]?.extensions).toMatchObject({
        code: 'IDEMPOTENCY_KEY_REUSED',
        status: 422,
      });
      // The sample app shows callers no stack trace (Apollo's default outside production would).
      expect(reused.body.errors![0].extensions.stacktrace).toBeUndefined();
      expect(await payments(customerId)).toBe(1);
      const http = await postJson(`${url}/payments`, key, input);
      expect(http.status).toBe(201);
      expect(http.json().id).not.toBe(first.body.data.createPayment.id);
      expect(await payments(customerId)).toBe(2);
    });
  });
});
