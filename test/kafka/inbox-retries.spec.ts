import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  closeTestDatabase,
  databaseKinds,
  openTestDatabase,
  type TestDatabase,
} from '../support/databases';
import { eventually } from '../support/eventually';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';
import {
  committedBy,
  createTopic,
  deleteTopic,
  recordsIn,
  sampleAppKafkaEnv,
  uniqueName,
} from './support/kafka-cluster';
import { ledgerOf, payTwice } from './support/payments';

/**
 * A handler that fails on Kafka: the record is not committed, kafkajs delivers it again, the
 * inbox counts the attempts. A transient failure ends with one entry; a poison record is
 * recorded failed after INBOX_MAX_ATTEMPTS and its offset committed, so the partition goes on
 * to the next record (no dead-letter topic: the inbox row keeps the message id and last error).
 */
const kinds = databaseKinds().filter((k) => k === 'postgres' || k === 'mssql');
const PAYMENTS = 3;

describe.each(kinds)('Kafka: failing ledger handler (%s)', (kind) => {
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
  });

  afterAll(async () => {
    for (const topic of topics) await deleteTopic(topic);
    await closeTestDatabase({ ds, db });
  });

  const run = async (failAttempts: number) => {
    const topic = uniqueName('payments-retries');
    topics.push(topic);
    // One partition: the records of all payments queue behind one another.
    await createTopic(topic, 1);
    // The relay publishes at least once (sampleAppKafkaEnv): the record count below is about
    // the consumer's retries only.
    app = await spawnSampleApp({
      ...sampleAppKafkaEnv(db.url, topic),
      INBOX_MAX_ATTEMPTS: '3',
      LEDGER_DEMO_FAIL_ATTEMPTS: String(failAttempts),
    });
    const customerId = `kafka-${randomUUID().slice(0, 8)}`;
    const payments: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) payments.push(await payTwice(app.url, customerId));
    // Every record settled: the group committed past the last one. The relay publishes at least
    // once (a batch whose acknowledgement came late on a loaded machine is published again), so
    // the topic may hold a payment's record twice; the consumer's retries themselves add none
    // (they re-read the same offset), and the inbox applies a repeated record once.
    await eventually(
      'the consumer group past every record',
      async () => {
        const records = await recordsIn(topic);
        return records >= PAYMENTS && (await committedBy(topic, topic)) >= records;
      },
      60_000,
      250,
    );
    const rows: Array<{ status: string; attempts: number }> = await ds.query(
      `SELECT status, attempts FROM inbox_messages WHERE consumer = 'ledger'`,
    );
    return { payments, url: app.url, rows };
  };

  it('a transient failure (2 of 3 attempts) is retried from the same offset: one entry each', async () => {
    const { payments, url } = await run(2);
    for (const id of payments) expect(await ledgerOf(url, id)).toHaveLength(1);
  });

  it('a poison record is recorded failed after 3 attempts and the partition moves on', async () => {
    const { payments, url, rows } = await run(1000);
    for (const id of payments) expect(await ledgerOf(url, id)).toHaveLength(0);
    const failed = rows.filter((r) => r.status === 'failed');
    expect(failed.length).toBeGreaterThanOrEqual(PAYMENTS);
    for (const r of failed) expect(Number(r.attempts)).toBe(3);
  });
});
