import type { INestApplication } from '@nestjs/common';
import * as amqp from 'amqplib';
import { randomUUID } from 'node:crypto';
import { OutboxAdminService, OutboxPublisher } from '../../lib';
import type { OutboxMessage } from '../../lib';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { baseUrl, startSampleApp } from '../support/sample-app';
import { NATS_URL, RABBIT_URL } from '../fixtures/outbox/rabbit-collector';

type Broker = 'embedded' | 'rabbitmq' | 'nats';
const brokers: Broker[] = ['embedded', 'rabbitmq', 'nats'];
const cases = databaseKinds().flatMap((db) => brokers.map((b) => [db, b] as const));

async function eventually<T>(
  probe: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.each(cases)('sample app ledger on %s / %s transport', (kind, broker) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;
  const queue = `ledger-test-${randomUUID()}`;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    const env: Record<string, string> = {
      OUTBOX_POLL_INTERVAL_MS: '200',
      OUTBOX_BACKOFF_BASE_MS: '100',
      BROKER_QUEUE: queue,
    };
    if (broker === 'rabbitmq') env.BROKER_URL = RABBIT_URL;
    if (broker === 'nats') env.BROKER_URL = NATS_URL;
    // The ledger handler fails each message's first run where the transport delivers again:
    // RabbitMQ redelivers (nack with requeue); on the embedded default the in-process handler's
    // failure fails the relay's publish and the relay retries. Core NATS has no redelivery.
    if (broker !== 'nats') env.LEDGER_DEMO_FAIL_ATTEMPTS = '1';
    app = await startSampleApp(db.url, 'express', env);
    url = await baseUrl(app);
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    await app?.close();
    if (broker === 'rabbitmq') {
      const conn = await amqp.connect(RABBIT_URL);
      const ch = await conn.createChannel();
      await ch.deleteQueue(queue);
      await conn.close();
    }
    await db?.drop();
  });

  const ledgerOf = async (paymentId: string) => {
    const r = await fetch(`${url}/ledger?paymentId=${encodeURIComponent(paymentId)}`);
    expect(r.status).toBe(200);
    return (await r.json()) as any[];
  };
  const duplicatesSeen = async (): Promise<number> => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('inbox_duplicates') && l.includes('consumer="ledger"'));
    return line ? Number(line.trim().split(/\s+/).pop()) : 0;
  };
  const pay = (key: string, customerId: string) =>
    fetch(`${url}/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ amount: 42.5, currency: 'EUR', customerId }),
    });

  it('writes exactly one ledger entry per payment, whatever the client and the transport repeat', async () => {
    const customerId = `ledger-${randomUUID().slice(0, 8)}`;
    const payments: any[] = [];
    for (let i = 0; i < 3; i++) {
      const key = randomUUID();
      // The client retries: two at once, then one more (replayed by the HTTP gate).
      const [a, b] = await Promise.all([pay(key, customerId), pay(key, customerId)]);
      const c = await pay(key, customerId);
      const created = [a, b, c].filter((r) => r.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(2);
      expect(c.status).toBe(201);
      expect(c.headers.get('idempotency-replayed')).toBe('true');
      payments.push(await c.json());
    }
    for (const p of payments) {
      const entries = await eventually(async () => {
        const e = await ledgerOf(p.id);
        return e.length > 0 && e;
      }, `the ledger entry of ${p.id}`);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        paymentId: p.id,
        entryType: 'capture',
        amount: 42.5,
        currency: 'EUR',
        customerId,
      });
      expect(typeof entries[0].messageId).toBe('string');
      const [record] = await ds.query(
        `SELECT status, attempts FROM inbox_messages WHERE consumer = 'ledger' AND message_id = ${placeholder(kind, 0)}`,
        [entries[0].messageId],
      );
      expect(record.status).toBe('processed');
      if (broker === 'embedded') {
        // The embedded default runs the handler in its own transaction with its inbox record
        // (@OnOutboxMessage): the failed first run rolled back with the record and was counted
        // on the outbox message, which the relay published again.
        // The relay counts the attempt when it marks the message sent, after the handler's
        // transaction committed the ledger entry: wait for the mark.
        expect(Number(record.attempts)).toBe(1);
        const sent = await eventually(async () => {
          const m = await app.get(OutboxAdminService).get(entries[0].messageId);
          return m?.status === 'sent' && m;
        }, `outbox message ${entries[0].messageId} marked sent`);
        expect(sent.attempts).toBe(2);
      } else expect(Number(record.attempts)).toBe(broker === 'nats' ? 1 : 2);
    }

    // The transport repeats every message 3 times (a relay that republished, a broker redelivery).
    const publisher = app.get<OutboxPublisher>(OutboxPublisher);
    const before = await duplicatesSeen();
    for (const p of payments) {
      const [entry] = await ledgerOf(p.id);
      const message: OutboxMessage = {
        id: entry.messageId,
        type: 'payment.captured',
        payload: {
          paymentId: p.id,
          tenantId: 'public',
          amount: 42.5,
          currency: 'EUR',
          customerId,
          capturedAt: p.createdAt,
        },
        headers: {
          'message-id': entry.messageId,
          'message-type': 'payment.captured',
          'partition-key': p.id,
        },
        partitionKey: p.id,
        seq: '0',
        attempts: 0,
        createdAt: new Date(),
      };
      for (let i = 0; i < 3; i++) await publisher.publish(message);
    }
    await eventually(
      async () => (await duplicatesSeen()) - before >= 9,
      '9 duplicates skipped by the inbox',
    );
    for (const p of payments) expect(await ledgerOf(p.id)).toHaveLength(1);
  });

  it('answers GET /ledger without a valid paymentId with 400 problem+json, and an unknown payment with []', async () => {
    const missing = await fetch(`${url}/ledger`);
    expect(missing.status).toBe(400);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
    expect(await missing.json()).toMatchObject({
      status: 400,
      detail: expect.stringContaining('paymentId'),
    });
    const twice = await fetch(`${url}/ledger?paymentId=a&paymentId=b`);
    expect(twice.status).toBe(400);
    const unknown = await fetch(`${url}/ledger?paymentId=${randomUUID()}`);
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toEqual([]);
  });
});
