import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
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
import { deadOutbox, ledgerOf, notificationsOf, payTwice, pendingOutbox } from './support/payments';

/**
 * The acceptance of issue 53: the sample app (dist/sample-app/main.js) with
 * BROKER_URL=kafka://127.0.0.1:9092 on a 3-node cluster (replication factor 3, min ISR 2);
 * 30 payments, each sent twice with its key; the leader of the topic's partition 0 SIGKILLed
 * after the 10th and started again after the 20th: every payment has exactly one ledger entry
 * within 60 s. On PostgreSQL, and on SQL Server when MSSQL_URL is set.
 */
const kinds = databaseKinds().filter((k) => k === 'postgres' || k === 'mssql');

describe.each(kinds)('Kafka: brokers killed mid-stream (%s)', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let app: AppProcess | undefined;
  const topics: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    ds = await openDataSource(db.url);
  });

  afterEach(async () => {
    await app?.kill('SIGKILL');
    app = undefined;
    // A failed test may have left nodes down: the next one starts on the whole cluster.
    await startCluster();
  });

  afterAll(async () => {
    await ds?.destroy();
    for (const topic of topics) await deleteTopic(topic);
    await db?.drop();
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
      // A broker out of reach counts no attempt (KafkaPublisher.isUnavailable): three attempts
      // ride out a leader's failover (6-10 s). The whole cluster's restart passes more (below).
      OUTBOX_MAX_ATTEMPTS: maxAttempts,
    });
    return { topic, app };
  };

  /** Every payment has a ledger entry within 60 s; the outbox drains; exactly one entry each. */
  const exactlyOnce = async (url: string, payments: string[], customerId: string) => {
    expect(new Set(payments).size).toBe(payments.length);
    await eventually(
      `a ledger entry for each of the ${payments.length} payments`,
      async () => {
        for (const id of payments) if ((await ledgerOf(url, id)).length === 0) return false;
        return true;
      },
      60_000,
      250,
    );
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
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ paymentId: id, entryType: 'capture', customerId });
    }
    // Fan-out: the notifications service reads the same topic in a consumer group of its own,
    // with its own inbox: every payment once there too.
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

  it('gives every payment exactly one ledger entry after the partition leader is SIGKILLed and restarted', async () => {
    const { topic, app } = await start();
    const customerId = `kafka-${randomUUID().slice(0, 8)}`;
    const payments: string[] = [];
    let killed: number | undefined;
    for (let i = 1; i <= 30; i++) {
      payments.push(await payTwice(app.url, customerId));
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

  it('gives every payment exactly one ledger entry after the whole cluster is down for 10 s', async () => {
    const { app } = await start(
      // A batch sent while the restarted cluster elects leaders can outlast the relay's publish
      // time-out with the connection up: counted as an attempt (docs/outbox.md); with 3 attempts
      // one message went dead in CI of 2026-12-05 (its payment was booked all the same). Until a
      // Kafka time-out tells an unreachable cluster from a slow one, attempts to spare here.
      '100',
    );
    const customerId = `kafka-${randomUUID().slice(0, 8)}`;
    const payments: string[] = [];
    for (let i = 1; i <= 10; i++) payments.push(await payTwice(app.url, customerId));
    await killCluster();
    const downSince = Date.now();
    // Payments go on while no broker is there: they wait in the outbox.
    for (let i = 1; i <= 10; i++) {
      payments.push(await payTwice(app.url, customerId));
      await sleep(200);
    }
    await sleep(Math.max(0, 10_000 - (Date.now() - downSince)));
    await startCluster();
    for (let i = 1; i <= 10; i++) payments.push(await payTwice(app.url, customerId));
    await exactlyOnce(app.url, payments, customerId);
  });
});
