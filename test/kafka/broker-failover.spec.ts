import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  closeTestDatabase,
  databaseKinds,
  openTestDatabase,
  type TestDatabase,
} from '../support/databases';
import { eventually, sleep } from '../support/eventually';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';
import { faultDbUrl } from '../faults/support/fault-cluster';
import {
  createTopic,
  deleteTopic,
  killCluster,
  killNode,
  leaderOf,
  startCluster,
  uniqueName,
} from './support/kafka-cluster';
import {
  deadOutbox,
  everyPaymentLedgered,
  expectAppliedInOrder,
  ledgerOf,
  notificationsOf,
  payWithRefunds,
  pendingOutbox,
} from './support/payments';

/**
 * The acceptance of issue 53, each key with several events: the sample app
 * (dist/sample-app/main.js) with BROKER_URL=kafka://127.0.0.1:9092 on a 3-node cluster
 * (replication factor 3, min ISR 2); 30 payments, each sent twice with its key and refunded twice
 * after (three events with the payment's partition key, in sequential transactions); the leader
 * of the topic's partition 0 SIGKILLed after the 10th and started again after the 20th: every
 * event of every payment has exactly one ledger entry within 60 s, each payment's applied in the
 * order they were written. On PostgreSQL, and on SQL Server when MSSQL_URL is set.
 */
const kinds = databaseKinds().filter((k) => k === 'postgres' || k === 'mssql');

describe.each(kinds)('Kafka: brokers killed mid-stream (%s)', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let app: AppProcess | undefined;
  const topics: string[] = [];

  beforeAll(async () => {
    ({ db, ds } = await openTestDatabase(kind));
  });

  afterEach(async () => {
    await app?.kill('SIGKILL');
    app = undefined;
    // A failed test may have left nodes down: the next one starts on the whole cluster.
    await startCluster();
  });

  afterAll(async () => {
    for (const topic of topics) await deleteTopic(topic);
    await closeTestDatabase({ ds, db });
  });

  const start = async (maxAttempts = '3') => {
    const topic = uniqueName('payments-failover');
    topics.push(topic);
    await createTopic(topic, 3);
    app = await spawnSampleApp({
      DB_URL: faultDbUrl(db.url),
      BROKER_URL: 'kafka://127.0.0.1:9092',
      BROKER_QUEUE: topic,
      OUTBOX_POLL_INTERVAL_MS: '200',
      OUTBOX_BACKOFF_BASE_MS: '200',
      OUTBOX_BACKOFF_MAX_MS: '2000',
      OUTBOX_PUBLISH_TIMEOUT_MS: '5000',
      // A key's events are never published while an older one of the key is pending.
      OUTBOX_ORDERED: 'true',
      // A broker out of reach, a leader election, too few in-sync replicas or a publish timed
      // out while the batch still waits for Kafka count no attempt (KafkaPublisher.isUnavailable):
      // three attempts are for what Kafka refuses for the message.
      OUTBOX_MAX_ATTEMPTS: maxAttempts,
    });
    return { topic, app };
  };

  /**
   * Every event of every payment has its ledger entry within 60 s; the outbox drains; exactly
   * one entry per event, each payment's in the order its events were written.
   */
  const exactlyOnce = async (url: string, payments: string[], customerId: string) => {
    expect(new Set(payments).size).toBe(payments.length);
    await everyPaymentLedgered(url, payments);
    // Everything was published (acknowledged by the cluster), nothing given up.
    await eventually(
      'an empty outbox',
      async () => (await pendingOutbox(ds, { kind, ids: payments })) === 0,
      30_000,
      250,
    );
    expect(await deadOutbox(ds)).toBe(0);
    for (const id of payments) {
      const entries = await ledgerOf(url, id);
      expectAppliedInOrder(entries, id);
      for (const e of entries) expect(e.customerId).toBe(customerId);
    }
    // Fan-out: the notifications service reads the same topic in a consumer group of its own,
    // with its own inbox (it handles only payment.captured): every payment once there too.
    await eventually(
      `a notification for each of the ${payments.length} payments`,
      async () => {
        for (const id of payments) if ((await notificationsOf(url, id)).length === 0) return false;
        return true;
      },
      60_000,
      250,
    );
    for (const id of payments) expect(await notificationsOf(url, id)).toHaveLength(1);
  };

  it('gives every event of every payment exactly one ledger entry, each key in order, after the partition leader is SIGKILLed and restarted', async () => {
    const { topic, app } = await start();
    const customerId = `kafka-${randomUUID().slice(0, 8)}`;
    const payments: string[] = [];
    let killed: number | undefined;
    for (let i = 1; i <= 30; i++) {
      payments.push(await payWithRefunds(app.url, customerId));
      if (i === 10) {
        killed = await leaderOf(topic, 0);
        await killNode(killed);
      }
      if (i === 20) await startCluster();
      // Paced, so the relay publishes while the leader dies and while it comes back.
      await sleep(100);
    }
    expect(killed).toBeDefined();
    await exactlyOnce(app.url, payments, customerId);
  });

  it('gives every event of every payment exactly one ledger entry, each key in order, after the whole cluster is down for 10 s', async () => {
    // Three attempts, as above: a batch that times out while the restarted cluster elects its
    // leaders (kafkajs retrying inside sendBatch on an open connection) is no attempt
    // (KafkaPublisher.isUnavailable); the test proves no message went dead.
    const { app } = await start('3');
    const customerId = `kafka-${randomUUID().slice(0, 8)}`;
    const payments: string[] = [];
    for (let i = 1; i <= 10; i++) payments.push(await payWithRefunds(app.url, customerId));
    await killCluster();
    const downSince = Date.now();
    // Payments go on while no broker is there: they wait in the outbox.
    for (let i = 1; i <= 10; i++) {
      payments.push(await payWithRefunds(app.url, customerId));
      await sleep(200);
    }
    await sleep(Math.max(0, 10_000 - (Date.now() - downSince)));
    await startCluster();
    for (let i = 1; i <= 10; i++) payments.push(await payWithRefunds(app.url, customerId));
    await exactlyOnce(app.url, payments, customerId);
  });
});
