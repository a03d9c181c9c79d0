import { type ClientProxy, ClientProxyFactory, Transport } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { lastValueFrom, timeout } from 'rxjs';
import type { DataSource } from 'typeorm';
import { PROBLEM_TYPES } from '../../lib/problem-details';
import {
  closeTestDatabase,
  databaseKinds,
  openTestDatabase,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';
import { postJson } from '../fixtures/gate/http';
import { deleteQueue, NATS_URL, RABBIT_URL } from '../fixtures/outbox/rabbit-collector';
import { keyedRecord } from '../fixtures/rpc/keyed-record';

/**
 * The sample app's request pattern `payments.create` (BROKER_URL nats://… or amqp://…), guarded by
 * `@Idempotent()` keyed by the transport's `Idempotency-Key` header, in real processes: a
 * duplicate gets the same reply; a process killed (SIGKILL) in the handler, before its
 * transaction commits, leaves the key free, and the retry on a new process makes ONE payment.
 */
const PATTERN = 'payments.create';

type Broker = 'nats' | 'rabbitmq';

function clientOf(broker: Broker, queue: string): ClientProxy {
  return broker === 'nats'
    ? ClientProxyFactory.create({ transport: Transport.NATS, options: { servers: [NATS_URL] } })
    : ClientProxyFactory.create({
        transport: Transport.RMQ,
        options: { urls: [RABBIT_URL], queue, queueOptions: { durable: true } },
      });
}

describe.each(databaseKinds())('payments.create over a broker, sample app on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, ds } = await openTestDatabase(kind));
  }, 300_000);

  afterAll(() => closeTestDatabase({ ds, db }));

  const payments = async (customerId: string): Promise<number> =>
    (
      await ds.query(`SELECT id FROM payments WHERE customer_id = ${placeholder(kind, 0)}`, [
        customerId,
      ])
    ).length;

  describe.each<Broker>(['nats', 'rabbitmq'])('%s', (broker) => {
    const queue = `rpc-sample-${randomUUID()}`;
    let client: ClientProxy;
    const apps: AppProcess[] = [];
    const env = (faults?: string): Record<string, string> => ({
      DB_URL: db.url,
      BROKER_URL: broker === 'nats' ? NATS_URL : RABBIT_URL,
      BROKER_QUEUE: queue,
      ...(faults ? { EO_TEST_FAULTS: faults } : {}),
    });
    const start = async (faults?: string) => {
      const app = await spawnSampleApp(env(faults));
      apps.push(app);
      return app;
    };

    beforeAll(async () => {
      client = clientOf(broker, queue);
      await client.connect();
    });

    afterAll(async () => {
      await client?.close();
      for (const app of apps) await app.kill('SIGKILL');
      if (broker === 'rabbitmq') await deleteQueue(queue);
    });

    const send = (body: object, key: string, ms = 15_000) =>
      lastValueFrom(client.send(PATTERN, keyedRecord(broker, body, key)).pipe(timeout(ms)));

    /** Sends until answered, as a careful client does: back off on a retryable problem or a time-out. */
    const sendUntilAnswered = async (body: object, key: string): Promise<any> => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await send(body, key, 10_000);
        } catch (e: any) {
          const retryable = e?.retryable === true || e?.name === 'TimeoutError';
          if (!retryable || attempt >= 10) throw e;
          await new Promise((r) => setTimeout(r, 1000 * Math.max(1, e?.retryAfter ?? 1)));
        }
      }
    };

    it('SIGKILL in the handler, then the retry on a new process: one payment', async () => {
      const victim = await start('payments.in-handler');
      const customerId = `rpc-kill-${randomUUID().slice(0, 8)}`;
      const key = randomUUID();
      const body = { amount: 7, currency: 'EUR', customerId };
      const died = new Promise<void>((r) => victim.child.once('exit', () => r()));
      await expect(send(body, key, 5_000)).rejects.toBeDefined();
      await died;
      expect(victim.output()).toContain('fault point payments.in-handler reached');
      expect(await payments(customerId)).toBe(0);
      await start();
      const reply = await sendUntilAnswered(body, key);
      expect(reply).toMatchObject({ ...body, id: expect.any(String) });
      expect(await sendUntilAnswered(body, key)).toEqual(reply);
      expect(await payments(customerId)).toBe(1);
    });
    it('a duplicate request gets the same reply; reuse with another amount gets a 422 problem', async () => {
      // The process that took over from the killed one (one boot less per database and broker).
      const customerId = `rpc-${randomUUID().slice(0, 8)}`;
      const key = randomUUID();
      const body = { amount: 12.5, currency: 'EUR', customerId };
      const first = await sendUntilAnswered(body, key);
      expect(first).toMatchObject({ ...body, status: 'captured', id: expect.any(String) });
      expect(await send(body, key)).toEqual(first);
      let reused: any;
      await send({ ...body, amount: 13 }, key).catch((e) => (reused = e));
      expect(reused).toMatchObject({ type: PROBLEM_TYPES.mismatch, status: 422 });
      expect(await payments(customerId)).toBe(1);
      // An HTTP request with the same key is another scope: its own payment.
      const http = await postJson(`${apps[apps.length - 1].url}/payments`, key, body);
      expect(http.status).toBe(201);
      expect(http.json().id).not.toBe(first.id);
      expect(await payments(customerId)).toBe(2);
    });
  });
});
