import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { eventually } from '../support/eventually';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';
import { deleteTopic, kafka, sampleAppKafkaEnv, uniqueName } from './support/kafka-cluster';
import { ledgerOf, payTwice } from './support/payments';

/**
 * The sample app on a topic the cluster has not got yet (a new cluster or a new BROKER_QUEUE):
 * it creates the topic at boot, as it asserts its queue on RabbitMQ, instead of failing the boot
 * with UNKNOWN_TOPIC_OR_PARTITION; payments then reach the ledger.
 */
describe('Kafka: the sample app on a new topic (postgres)', () => {
  let db: TestDatabase;
  let app: AppProcess | undefined;
  const topic = uniqueName('payments-new');

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
  });

  afterAll(async () => {
    await app?.kill('SIGKILL');
    await deleteTopic(topic);
    await db?.drop();
  });

  it('creates the topic at boot and books each payment once', async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(await admin.listTopics()).not.toContain(topic);
      app = await spawnSampleApp(sampleAppKafkaEnv(db.url, topic));
      expect(await admin.listTopics()).toContain(topic);
    } finally {
      await admin.disconnect();
    }
    const customerId = `kafka-${randomUUID().slice(0, 8)}`;
    const payments = [await payTwice(app.url, customerId), await payTwice(app.url, customerId)];
    for (const id of payments) {
      await eventually(
        `the ledger entry of ${id}`,
        async () => (await ledgerOf(app!.url, id)).length > 0,
        60_000,
        250,
      );
      expect(await ledgerOf(app.url, id)).toHaveLength(1);
    }
  });
});
