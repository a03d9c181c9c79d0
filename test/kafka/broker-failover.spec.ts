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
  killNode,
  leaderOf,
  startCluster,
  uniqueName,
} from './support/kafka-cluster';
import { deadOutbox, ledgerOf, payTwice, pendingOutbox } from './support/payments';

/**
 * The acceptance of issue 53: the sample app (dist/sample-app/main.js) with
 * BROKER_URL=kafka://127.0.0.1:9092 on a 3-node cluster (replication factor 3, min ISR 2);
 * 30 payments, each sent twice with its key; the leader of the topic's partition 0 SIGKILLed
 * after the 10th and started again after the 20th: every payment has exactly one ledger entry
 * within 60 s. On PostgreSQL, and on SQL Server when MSSQL_URL is set.
 */
const kinds = databaseKinds().filter((k) => k === 'postgres' || k === 'mssql');

describe.each(kinds)('Kafka: partition leader killed mid-stream (%s)', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let app: AppProcess | undefined;
  const topic = uniqueName('payments-failover');

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    await createTopic(topic, 3);
  });

  afterAll(async () => {
    await app?.kill('SIGKILL');
    await ds?.destroy();
    await startCluster();
    await deleteTopic(topic);
    await db?.drop();
  });

  it('gives every payment exactly one ledger entry after a broker SIGKILL and restart', async () => {
    app = await spawnSampleApp({
      DB_URL: faultDbUrl(db.url),
      BROKER_URL: 'kafka://127.0.0.1:9092',
      BROKER_QUEUE: topic,
      OUTBOX_POLL_INTERVAL_MS: '200',
      OUTBOX_BACKOFF_BASE_MS: '200',
      OUTBOX_BACKOFF_MAX_MS: '2000',
      // Until a broker outage stops counting as a failed attempt, enough attempts to ride out
      // the 6-10 s a leader's failover takes (kafkajs holds the batch meanwhile).
      OUTBOX_MAX_ATTEMPTS: '100',
    });
    ds = await openDataSource(db.url);
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
    expect(new Set(payments).size).toBe(30);

    await eventually(
      'a ledger entry for each of the 30 payments',
      async () => {
        for (const id of payments) if ((await ledgerOf(app!.url, id)).length === 0) return false;
        return true;
      },
      60_000,
      250,
    );
    // Everything was published (confirmed by the cluster), nothing given up.
    await eventually('an empty outbox', async () => (await pendingOutbox(ds)) === 0, 30_000, 250);
    expect(await deadOutbox(ds)).toBe(0);
    for (const id of payments) {
      const entries = await ledgerOf(app.url, id);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ paymentId: id, entryType: 'capture', customerId });
    }
  });
});
