import { ClientProxyFactory, Transport } from '@nestjs/microservices';
import { connect as connectNats, JSONCodec } from 'nats';
import { randomUUID } from 'node:crypto';
import { ClientProxyPublisher } from '../../lib';
import { type OutboxFixture, startOutboxFixture } from '../fixtures/outbox/outbox-fixture';
import { eventually } from '../support/eventually';
import { NATS_URL, RABBIT_URL, RabbitCollector } from '../fixtures/outbox/rabbit-collector';
import { TcpProxy } from '../fixtures/outbox/tcp-proxy';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';

/** The brokers are what is under test here: one database is enough (PostgreSQL when available). */
const kind = databaseKinds().includes('postgres') ? 'postgres' : 'sqlite';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe(`outbox relay to the real RabbitMQ and NATS (database: ${kind})`, () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const allSent = async (f: OutboxFixture, ids: string[]) => {
    for (const id of ids) if ((await f.admin.get(id))?.status !== 'sent') return false;
    return true;
  };

  it('RabbitMQ: publishes with publisher confirms; message id, type and headers travel as AMQP properties', async () => {
    const queue = `eo-outbox-${randomUUID()}`;
    const collector = await new RabbitCollector(queue).start();
    const client = ClientProxyFactory.create({
      transport: Transport.RMQ,
      options: { urls: [RABBIT_URL], queue, queueOptions: { durable: false } },
    });
    const f = await startOutboxFixture({
      dbUrl: db.url,
      outbox: { publisher: new ClientProxyPublisher(client), pollIntervalMs: 100 },
    });
    try {
      const events = Array.from({ length: 30 }, (_, i) => ({
        id: randomUUID(),
        type: 'payment.captured',
        partitionKey: `pay-${i}`,
        headers: { 'x-tenant': 'acme' },
        payload: { paymentId: `pay-${i}`, amount: i + 0.5 },
      }));
      await f.txHost.withTransaction(() => f.outbox.add(events));
      await eventually('all 30 arrive in the queue', () =>
        events.every((e) => collector.ids().includes(e.id)),
      );
      const m = collector.messages.find((x) => x.messageId === events[7].id)!;
      expect(m.type).toBe('payment.captured');
      expect(m.persistent).toBe(true);
      expect(m.headers).toMatchObject({
        'message-id': events[7].id,
        'message-type': 'payment.captured',
        'partition-key': 'pay-7',
        'x-tenant': 'acme',
      });
      expect(m.packet).toEqual({
        pattern: 'payment.captured',
        data: { paymentId: 'pay-7', amount: 7.5 },
      });
      await eventually('all rows marked sent', () =>
        allSent(
          f,
          events.map((e) => e.id),
        ),
      );
      expect([...collector.counts().values()].every((n) => n === 1)).toBe(true);
    } finally {
      await f.close();
      await client.close();
      await collector.stop();
    }
  });

  it('NATS: message id and headers travel as NATS headers (with Nats-Msg-Id); the batch is flushed before it is marked sent', async () => {
    const nc = await connectNats({ servers: NATS_URL });
    const type = `eo.outbox.test.${randomUUID().slice(0, 8)}`;
    const received: Array<{
      id: string | undefined;
      natsMsgId: string | undefined;
      tenant: string | undefined;
      data: any;
    }> = [];
    const sub = nc.subscribe(type);
    void (async () => {
      const codec = JSONCodec<any>();
      for await (const msg of sub) {
        received.push({
          id: msg.headers?.get('message-id'),
          natsMsgId: msg.headers?.get('Nats-Msg-Id'),
          tenant: msg.headers?.get('x-tenant'),
          data: codec.decode(msg.data),
        });
      }
    })();
    await nc.flush();
    const client = ClientProxyFactory.create({
      transport: Transport.NATS,
      options: { servers: [NATS_URL] },
    });
    const f = await startOutboxFixture({
      dbUrl: db.url,
      outbox: { publisher: new ClientProxyPublisher(client), pollIntervalMs: 100 },
    });
    try {
      const events = Array.from({ length: 10 }, (_, i) => ({
        id: randomUUID(),
        type,
        headers: { 'x-tenant': 'acme' },
        payload: { i },
      }));
      await f.txHost.withTransaction(() => f.outbox.add(events));
      await eventually('all 10 arrive', () =>
        events.every((e) => received.some((r) => r.id === e.id)),
      );
      const r = received.find((x) => x.id === events[3].id)!;
      expect(r.natsMsgId).toBe(events[3].id);
      expect(r.tenant).toBe('acme');
      expect(r.data).toEqual({ pattern: type, data: { i: 3 } });
      await eventually('all rows marked sent', () =>
        allSent(
          f,
          events.map((e) => e.id),
        ),
      );
    } finally {
      await f.close();
      await client.close();
      sub.unsubscribe();
      await nc.close();
    }
  });

  it('RabbitMQ unreachable for a while: messages wait (no attempt counted, the relay backs off), then all arrive', async () => {
    const queue = `eo-outbox-outage-${randomUUID()}`;
    const collector = await new RabbitCollector(queue).start();
    const proxy = await new TcpProxy(Number(new URL(RABBIT_URL).port || 5672)).start();
    const viaProxy = new URL(RABBIT_URL);
    viaProxy.port = String(proxy.port);
    const client = ClientProxyFactory.create({
      transport: Transport.RMQ,
      options: {
        urls: [viaProxy.toString()],
        queue,
        queueOptions: { durable: false },
        socketOptions: { heartbeatIntervalInSeconds: 1, reconnectTimeInSeconds: 1 },
      },
    });
    const f = await startOutboxFixture({
      dbUrl: db.url,
      outbox: {
        publisher: new ClientProxyPublisher(client, { confirmTimeoutMs: 700 }),
        pollIntervalMs: 100,
        publishTimeoutMs: 1000,
        leaseMs: 5000,
        backoffBaseMs: 200,
        backoffMaxMs: 1000,
        // 2 attempts: an outage that burned attempts would make these messages dead.
        maxAttempts: 2,
      },
    });
    try {
      const before = randomUUID();
      await f.txHost.withTransaction(() =>
        f.outbox.add({ id: before, type: 'outage.before', payload: {} }),
      );
      await eventually('the broker is reached through the proxy', () =>
        collector.ids().includes(before),
      );

      await proxy.cut();
      const during = Array.from({ length: 20 }, () => randomUUID());
      await f.txHost.withTransaction(() =>
        f.outbox.add(
          during.map((id, i) => ({
            id,
            type: 'outage.during',
            partitionKey: `k${i % 4}`,
            payload: { i },
          })),
        ),
      );
      // The relay tries and finds the broker unreachable: no attempt is counted, it backs off as a whole.
      // In commit order (the default) a key's later messages wait for its oldest one: the four
      // oldest (one per key) are the ones tried.
      await eventually(
        'the oldest message of every key was tried while the broker is unreachable',
        async () => {
          for (const id of during.slice(0, 4)) {
            if (!(await f.admin.get(id))?.lastError?.includes('broker was unreachable')) {
              return false;
            }
          }
          return true;
        },
        30_000,
      );
      await sleep(1500);
      expect(during.some((id) => collector.ids().includes(id))).toBe(false);
      expect(f.relay.status.outage).toMatchObject({ reason: 'broker' });
      for (const id of during) {
        const e = (await f.admin.get(id))!;
        expect([e.status, e.attempts]).toEqual(['pending', 0]);
      }

      await proxy.restore();
      await eventually(
        'all messages arrive once the broker is back',
        () => during.every((id) => collector.ids().includes(id)),
        60_000,
      );
      await eventually('all rows marked sent', () => allSent(f, during), 30_000);
      const attempts = await Promise.all(
        during.map(async (id) => (await f.admin.get(id))!.attempts),
      );
      // The publish that went through, and only it, counted.
      expect(attempts).toEqual(during.map(() => 1));
      await eventually('the relay no longer backs off', () => f.relay.status.outage === null);
      expect(f.relay.status.dead).toBe(0);
    } finally {
      await f.close();
      await client.close();
      await proxy.cut();
      await collector.stop();
    }
  });
});
