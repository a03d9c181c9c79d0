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
import { BASE_ENV, faultDbUrl } from '../faults/support/fault-cluster';
import {
  committedBy,
  createTopic,
  deleteTopic,
  recordsIn,
  spawnVictim,
  uniqueName,
} from './support/kafka-cluster';
import {
  deadOutbox,
  EVENTS_PER_PAYMENT,
  everyPaymentLedgered,
  expectAppliedInOrder,
  ledgerDuplicates,
  ledgerOf,
  payWithRefunds,
  pendingOutbox,
} from './support/payments';

/**
 * Processes SIGKILLed at the library's crash points (test/support/crash-on-channel.js) while
 * they relay to and consume from a 3-node Kafka cluster: a relay after Kafka acknowledged a
 * batch and before it marked it published; a ledger consumer in the middle of a fetched batch
 * (an entry written, its transaction not committed, the batch's offsets not committed). Each
 * payment has three events with its partition key (captured, then refunded twice); every event
 * ends with exactly one ledger entry, each payment's applied in the order they were written.
 * On PostgreSQL, and on SQL Server with MSSQL_URL.
 */
const kinds = databaseKinds().filter((k) => k === 'postgres' || k === 'mssql');
const PAYMENTS = 30;
const EVENTS = PAYMENTS * EVENTS_PER_PAYMENT;

describe.each(kinds)('Kafka: relay and consumer SIGKILLed (%s)', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  const apps: Array<Pick<AppProcess, 'kill'>> = [];

  beforeAll(async () => {
    ({ db, ds } = await openTestDatabase(kind));
  });

  // Each test's processes end with it (a relay left running would publish the next test's rows).
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.kill('SIGKILL')));
  });

  afterAll(() => closeTestDatabase({ ds, db }));

  const envOf = (topic: string, env: Record<string, string>) => ({
    ...BASE_ENV,
    DB_URL: faultDbUrl(db.url),
    BROKER_URL: 'kafka://127.0.0.1:9092',
    BROKER_QUEUE: topic,
    // A key's events are never published while an older one of the key is pending.
    OUTBOX_ORDERED: 'true',
    ...env,
  });
  const spawn = async (topic: string, env: Record<string, string> = {}) => {
    const app = await spawnSampleApp(envOf(topic, env));
    apps.push(app);
    return app;
  };
  /** A process armed with a crash point: resolves with its output once it died. */
  const victim = (topic: string, env: Record<string, string>) => {
    const v = spawnVictim(envOf(topic, env));
    apps.push({
      kill: async () => {
        if (v.child.exitCode === null && v.child.signalCode === null) v.child.kill('SIGKILL');
        await v.exited;
      },
    });
    return v.exited;
  };
  const pending = (payments: string[]) => pendingOutbox(ds, { kind, ids: payments });

  const settled = async (url: string, payments: string[]) => {
    await everyPaymentLedgered(url, payments);
    await eventually('an empty outbox', async () => (await pending(payments)) === 0, 30_000, 250);
    expect(await deadOutbox(ds)).toBe(0);
    for (const id of payments) expectAppliedInOrder(await ledgerOf(url, id), id);
  };

  /**
   * 30 payments, each sent twice with its key and refunded twice, written by a process whose
   * relay is off and stopped afterwards: the outbox holds their 90 events, unpublished, and no
   * consumer is left.
   */
  const writePayments = async (topic: string) => {
    const writer = await spawn(topic, { OUTBOX_RELAY_ENABLED: 'false' });
    const customerId = `kafka-${randomUUID().slice(0, 8)}`;
    const payments: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) payments.push(await payWithRefunds(writer.url, customerId));
    await writer.kill('SIGTERM');
    expect(await pending(payments)).toBe(EVENTS);
    return payments;
  };

  it('relay SIGKILLed after Kafka acknowledged, before marking: republished, applied once, each key in order', async () => {
    const topic = uniqueName('payments-relay-crash');
    await createTopic(topic, 3);
    try {
      const payments = await writePayments(topic);
      // Its relay publishes the 90 messages, Kafka acknowledges, and it dies before marking them.
      const output = await victim(topic, { EO_TEST_FAULTS: 'relay-after-publish@1' });
      expect(output).toContain('fault point relay-after-publish reached');
      expect(await recordsIn(topic)).toBeGreaterThan(0);
      expect(await pending(payments)).toBe(EVENTS);
      // Another process's relay publishes them again once the lease lapsed.
      const survivor = await spawn(topic);
      await settled(survivor.url, payments);
      expect(await recordsIn(topic)).toBeGreaterThan(EVENTS);
    } finally {
      await deleteTopic(topic);
    }
  });

  it.each([
    ['the inbox commits each offset (autoCommit: false)', 'false'],
    ['kafkajs autoCommit', 'true'],
  ])(
    'consumer SIGKILLed mid-batch, %s: redelivered, the inbox skips what was applied, each key in order',
    async (_, autoCommit) => {
      const topic = uniqueName('payments-consumer-crash');
      await createTopic(topic, 3);
      try {
        const payments = await writePayments(topic);
        // Its relay publishes the 90 messages at once; its ledger (150 ms an entry) fetches them
        // in batches of several records and dies on its 12th entry: entries of the batches in
        // progress committed in the database, their offsets not committed in Kafka.
        const output = await victim(topic, {
          EO_TEST_FAULTS: 'ledger.in-handler@12',
          LEDGER_DEMO_DELAY_MS: '150',
          KAFKA_AUTO_COMMIT: autoCommit,
        });
        expect(output).toContain('fault point ledger.in-handler reached');
        // Without kafkajs' autoCommit, the inbox committed the offset of each record it settled.
        if (autoCommit === 'false') expect(await committedBy(topic, topic)).toBeGreaterThan(0);
        const survivor = await spawn(topic, { KAFKA_AUTO_COMMIT: autoCommit });
        await settled(survivor.url, payments);
        // Under autoCommit, kafkajs commits at the end of a batch: records the victim had applied
        // in its unfinished batches were delivered again and skipped by the inbox. (Under the
        // inbox's own commits only the record in flight comes again, and it had rolled back.)
        if (autoCommit === 'true') expect(await ledgerDuplicates(survivor.url)).toBeGreaterThan(0);
      } finally {
        await deleteTopic(topic);
      }
    },
  );
});
