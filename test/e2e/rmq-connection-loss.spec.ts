import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from 'amqplib';
import {
  AmqpFaultProxy,
  BASIC_CONSUME,
  CHANNEL_OPEN,
  EXCHANGE_DECLARE,
  QUEUE_DECLARE,
} from '../fixtures/outbox/amqp-fault-proxy';
import { RABBIT_URL } from '../fixtures/outbox/rabbit-collector';
import { eventually } from '../support/eventually';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';

/**
 * A RabbitMQ connection lost in the middle of a channel's set-up, on a real sample-app process
 * (its RabbitMQ consumer is Nest's ServerRMQ, its relay publishes through ClientRMQ) that reaches
 * the broker through a proxy reading the AMQP frames: the proxy drops the connection when it sends
 * a given method, so the broker never answers it. Before, either drop ended the process (fresh-
 * clone CI of d094af2, SQL Server fault suite: a connection lost during a database outage):
 * - at basic.consume: ServerRMQ does not await its `consume()`, whose promise then rejected
 *   unhandled;
 * - at queue.declare: the consumer's channel emitted `error` with no listener.
 * And one more, found by the fresh-clone CI of 2d5cd63 (SQL Server fault suite, the same
 * signature): Nest's ClientRMQ opens two channels on its first connection and keeps only the
 * second, so a loss while they open reached a channel nobody listened to.
 * The process must stay up, log what happened, and consume and publish again on its own. The
 * database plays no part, so the case runs once, on SQLite (the sample app's default).
 */
const RABBIT_PORT = Number(new URL(RABBIT_URL).port || 5672);
/** amqp-connection-manager reconnects 5 s after a loss (ServerRMQ and ClientRMQ defaults). */
const RECONNECT_WAIT_MS = 60_000;

describe('RabbitMQ connection lost during channel set-up (sample app process)', () => {
  const queue = `eo-conn-loss-${randomUUID()}`;
  let dir: string;
  let proxy: AmqpFaultProxy;
  let app: AppProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'eo-rmq-loss-'));
    proxy = await new AmqpFaultProxy(RABBIT_PORT).start();
    app = await spawnSampleApp({
      DB_URL: `sqlite:${join(dir, 'app.sqlite')}`,
      BROKER_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}`,
      BROKER_QUEUE: queue,
      // One consumer (the ledger's), as the drops below count connections.
      CONSUMERS: 'ledger',
      OUTBOX_POLL_INTERVAL_MS: '200',
      OUTBOX_BACKOFF_BASE_MS: '200',
      OUTBOX_BACKOFF_MAX_MS: '2000',
    });
  }, 120_000);

  afterAll(async () => {
    await app?.kill('SIGKILL');
    await proxy?.close();
    const conn = await amqp.connect(RABBIT_URL).catch(() => undefined);
    if (conn) {
      const ch = await conn.createChannel();
      for (const q of [queue, `${queue}.notifications`]) {
        await ch.deleteQueue(q).catch(() => undefined);
      }
      await ch.deleteExchange(`${queue}.events`).catch(() => undefined);
      await conn.close().catch(() => undefined);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const alive = () => app.child.exitCode === null && app.child.signalCode === null;

  /** A payment through the app, and its ledger entry: the relay published it, the consumer consumed it. */
  const paymentGoesThrough = async (label: string) => {
    const customerId = `c-${label}-${randomUUID().slice(0, 8)}`;
    let created: Response | undefined;
    await eventually(
      `payment ${label} is created`,
      async () => {
        if (!alive()) throw new Error(`the app exited:\n${app.output().slice(-3000)}`);
        created = await fetch(`${app.url}/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
          body: JSON.stringify({ amount: 10, currency: 'EUR', customerId }),
        });
        return created.status === 201;
      },
      RECONNECT_WAIT_MS,
    );
    const { id } = (await created!.json()) as { id: string };
    await eventually(
      `the ledger entry of payment ${label} (${id})`,
      async () => {
        if (!alive()) throw new Error(`the app exited:\n${app.output().slice(-3000)}`);
        const r = await fetch(`${app.url}/ledger?paymentId=${id}`);
        return r.status === 200 && ((await r.json()) as unknown[]).length === 1;
      },
      RECONNECT_WAIT_MS,
    );
  };

  /** Drops every broker connection once the proxy is armed, and waits until the armed drops happened. */
  const loseConnectionsAt = async (...methods: ReturnType<typeof BASIC_CONSUME>[]) => {
    const before = proxy.dropped.length;
    for (const m of methods) proxy.dropOn(m);
    proxy.dropAll();
    await eventually(
      `the connections are dropped at ${methods.map((m) => `${m.classId}.${m.methodId}`).join(', ')}`,
      () => {
        if (!alive()) throw new Error(`the app exited:\n${app.output().slice(-3000)}`);
        return proxy.dropped.length === before + methods.length;
      },
      RECONNECT_WAIT_MS,
    );
  };

  it(
    'publisher lost while the channels of its first connection open: the process stays up, says so, and publishes',
    async () => {
      // The consumer connected at boot; the relay's ClientRMQ connects at its first publish, so
      // the next connection the proxy sees is the publisher's.
      proxy.dropNextConnectionsAt(CHANNEL_OPEN);
      await paymentGoesThrough('first-publish');
      expect(proxy.dropped).toEqual([CHANNEL_OPEN]);
      expect(alive()).toBe(true);
      expect(app.output()).toContain('the publishing channel could not be set up');
    },
    4 * RECONNECT_WAIT_MS,
  );

  it(
    'consumer lost at basic.consume: the process stays up, says so, and consumes again',
    async () => {
      await paymentGoesThrough('before');
      await loseConnectionsAt(BASIC_CONSUME(queue));
      await paymentGoesThrough('after-consume-loss');
      expect(alive()).toBe(true);
      // LOG_FORMAT=json (spawnSampleApp): the quotes around the queue's name are escaped.
      expect(app.output()).toMatch(
        new RegExp(`the consumer on queue \\\\?"${queue}\\\\?" did not start`),
      );
    },
    4 * RECONNECT_WAIT_MS,
  );

  it(
    'consumer and publisher lost at queue.declare / exchange.declare: the process stays up, says so, and both work again',
    async () => {
      // Both channels declare on every connect: the consumer its queue, the relay the fanout
      // exchange it publishes to (the sample app's fan-out, docs/inbox.md).
      await loseConnectionsAt(QUEUE_DECLARE(queue), EXCHANGE_DECLARE(`${queue}.events`));
      await paymentGoesThrough('after-declare-loss');
      expect(alive()).toBe(true);
      expect(app.output()).toContain('the consuming channel could not be set up');
      expect(app.output()).toContain('the publishing channel could not be set up');
    },
    4 * RECONNECT_WAIT_MS,
  );
});
