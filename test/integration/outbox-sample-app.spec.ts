import type { INestApplication } from '@nestjs/common';
import { connect as connectNats, JSONCodec } from 'nats';
import { randomUUID } from 'node:crypto';
import { OutboxAdminService } from '../../lib';
import { eventually } from '../support/eventually';
import { deleteQueue, NATS_URL, RABBIT_URL } from '../fixtures/outbox/rabbit-collector';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { baseUrl, startSampleApp } from '../support/sample-app';

const body = (customerId: string) => ({ amount: 42.5, currency: 'EUR', customerId });

async function post(
  url: string,
  key: string,
  payload: object,
  headers: Record<string, string> = {},
) {
  return fetch(`${url}/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, ...headers },
    body: JSON.stringify(payload),
  });
}

describe.each(databaseKinds())(
  'sample app: POST /payments writes payment.captured to the outbox on %s',
  (kind) => {
    let db: TestDatabase;
    let app: INestApplication;
    let url: string;
    let admin: OutboxAdminService;

    /** The outbox message the ledger's in-process handler applied for a payment (its entry's messageId). */
    const delivered = (paymentId: string) =>
      eventually('the event is delivered to the ledger', async () => {
        const r = await fetch(`${url}/ledger?paymentId=${paymentId}`);
        const entries = (await r.json()) as Array<{ messageId: string }>;
        return entries.length ? admin.get(entries[0].messageId) : undefined;
      });

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      // No BROKER_URL: the embedded default (the in-process @OnOutboxMessage() handlers).
      app = await startSampleApp(db.url, 'express', { BROKER_URL: '' });
      url = await baseUrl(app);
      admin = app.get(OutboxAdminService);
    });

    afterAll(async () => {
      await app?.close();
      await db?.drop();
    });

    it('publishes the event of a committed payment on the embedded transport, keyed by the payment id', async () => {
      const r = await post(url, randomUUID(), body('outbox-1'));
      expect(r.status).toBe(201);
      const payment = (await r.json()) as { id: string; createdAt: string };
      const m = (await delivered(payment.id))!;
      expect(m.partitionKey).toBe(payment.id);
      expect(m.type).toBe('payment.captured');
      expect(m.payload).toEqual({
        paymentId: payment.id,
        tenantId: 'public',
        amount: 42.5,
        currency: 'EUR',
        customerId: 'outbox-1',
        capturedAt: payment.createdAt,
      });
      // The ledger's handler applied this very message (its entry carries the message id).
      const [entry] = (await (
        await fetch(`${url}/ledger?paymentId=${payment.id}`)
      ).json()) as Array<{
        messageId: string;
      }>;
      expect(entry.messageId).toBe(m.id);
      await eventually(
        'the outbox row is sent',
        async () => (await admin.get(m.id))?.status === 'sent',
      );
    });

    it('a replayed request adds no second event', async () => {
      const key = randomUUID();
      const first = await post(url, key, body('outbox-2'));
      const again = await post(url, key, body('outbox-2'));
      expect(again.headers.get('idempotency-replayed')).toBe('true');
      const payment = (await first.json()) as { id: string };
      await delivered(payment.id);
      expect(await admin.list({ partitionKey: payment.id })).toHaveLength(1);
    });

    it('a failed request (rolled back) adds no event', async () => {
      const before = await admin.counts();
      const r = await post(url, randomUUID(), body('outbox-3'), { 'x-demo-fail': '500' });
      expect(r.status).toBe(500);
      const after = await admin.counts();
      expect(after.pending + after.sent + after.dead).toBe(
        before.pending + before.sent + before.dead,
      );
      expect(
        (await admin.list({ limit: 1000 })).some(
          (m) => (m.payload as { customerId?: string }).customerId === 'outbox-3',
        ),
      ).toBe(false);
    });
  },
);

const brokerDb = databaseKinds().includes('postgres') ? 'postgres' : 'sqlite';

describe(`sample app with BROKER_URL (database: ${brokerDb})`, () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(brokerDb);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('BROKER_URL=amqp://… publishes payment.captured to RabbitMQ (confirmed, marked sent)', async () => {
    const queue = `eo-sample-${randomUUID()}`;
    const app = await startSampleApp(db.url, 'express', {
      BROKER_URL: RABBIT_URL,
      BROKER_QUEUE: queue,
    });
    try {
      const url = await baseUrl(app);
      const r = await post(url, randomUUID(), body('rmq-1'));
      expect(r.status).toBe(201);
      const payment = (await r.json()) as { id: string };
      const admin = app.get(OutboxAdminService);
      await eventually('the event is confirmed by RabbitMQ and marked sent', async () => {
        const [e] = await admin.list({ partitionKey: payment.id });
        return e?.status === 'sent';
      });
    } finally {
      await app.close();
      await deleteQueue(queue); // the sample app's queue is durable: remove it
    }
  });

  it('BROKER_URL=nats://… publishes payment.captured to NATS with the message id and partition key in headers', async () => {
    const nc = await connectNats({ servers: NATS_URL });
    const seen: Array<{ id?: string; key?: string; data: any }> = [];
    const sub = nc.subscribe('payment.captured');
    void (async () => {
      const codec = JSONCodec<any>();
      for await (const msg of sub) {
        seen.push({
          id: msg.headers?.get('message-id'),
          key: msg.headers?.get('partition-key'),
          data: codec.decode(msg.data),
        });
      }
    })();
    await nc.flush();
    const app = await startSampleApp(db.url, 'express', {
      BROKER_URL: NATS_URL,
      BROKER_QUEUE: `eo-sample-${randomUUID()}`,
    });
    try {
      const url = await baseUrl(app);
      const r = await post(url, randomUUID(), body('nats-1'));
      expect(r.status).toBe(201);
      const payment = (await r.json()) as { id: string };
      const m = await eventually('the event arrives on NATS', () =>
        seen.find((s) => s.key === payment.id),
      );
      expect(m.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(m.data.data).toMatchObject({
        paymentId: payment.id,
        customerId: 'nats-1',
        amount: 42.5,
      });
    } finally {
      await app.close();
      sub.unsubscribe();
      await nc.close();
    }
  });
});
