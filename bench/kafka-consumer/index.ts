import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import type { BenchContext, BenchReport, BenchSuite } from '../support/bench-suite';
import { percentile } from '../support/load';
import { createScratchDatabase } from '../support/scratch-database';
import { cpuTimeMs } from '../support/server-process';

/**
 * bench/kafka-consumer: the inbox consumer's messages/s on Kafka. The sample app
 * (dist/sample-app/main.js, relay off) consumes a topic of 3 partitions (replication 3 on the
 * 3-node test cluster, KAFKA_BROKERS) with its `@IdempotentConsumer()` ledger handler on
 * PostgreSQL: one ledger INSERT + the inbox claim per record, in one transaction, partitions 4 at
 * a time. N `payment.captured` records are produced at once (with `message-id` headers, as
 * KafkaPublisher sends them) to a consumer that has already joined; msg/s = N / time until the
 * inbox holds N processed rows. Offsets committed by the inbox after each record
 * (`autoCommit: false`) vs kafkajs' autoCommit (per batch, the sample app's default).
 */

const KAFKA_BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094';
type Mode = 'inbox-commits' | 'kafkajs-autocommit';
const LABEL: Record<Mode, string> = {
  'inbox-commits': 'offsets committed by the inbox, per record (autoCommit: false)',
  'kafkajs-autocommit': "kafkajs' autoCommit (per fetched batch)",
};

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });

async function startApp(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(__dirname, '..', '..', 'sample-app', 'main.js')], {
    env: { ...process.env, LOG_LEVEL: 'error', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sample app exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) return { child, url };
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error('sample app did not become healthy');
    await new Promise((r) => setTimeout(r, 200));
  }
}

const suite: BenchSuite = {
  description:
    "Inbox consumer on Kafka: the sample app's ledger consumer, msg/s and CPU per message (3-node cluster, PostgreSQL)",
  maxDurationMs: 8 * 60_000,
  async run(ctx: BenchContext): Promise<BenchReport> {
    const get = (name: string) =>
      ctx.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
    const n = Number(get('messages') ?? (ctx.quick ? 500 : 5000));
    const rounds = Number(get('rounds') ?? (ctx.quick ? 1 : 3));
    const { Kafka, logLevel, Partitioners } = await import('kafkajs');
    const kafka = new Kafka({
      clientId: 'bench-kafka-consumer',
      brokers: KAFKA_BROKERS.split(','),
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    ctx.onCleanup(() => admin.disconnect());
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    ctx.onCleanup(() => producer.disconnect());

    const results: Record<Mode, Array<{ msgPerSec: number; cpuMsPerMsg: number }>> = {
      'inbox-commits': [],
      'kafkajs-autocommit': [],
    };
    for (let round = 0; round < rounds; round++) {
      const modes: Mode[] =
        round % 2 === 0
          ? ['inbox-commits', 'kafkajs-autocommit']
          : ['kafkajs-autocommit', 'inbox-commits'];
      for (const mode of modes) {
        const scratch = await createScratchDatabase('postgres');
        const topic = `bench-consumer-${randomUUID().slice(0, 8)}`;
        await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
        const app = await startApp({
          DB_URL: scratch.url,
          BROKER_URL: `kafka://${KAFKA_BROKERS}`,
          BROKER_QUEUE: topic,
          OUTBOX_RELAY_ENABLED: 'false',
          KAFKA_AUTO_COMMIT: mode === 'kafkajs-autocommit' ? 'true' : 'false',
        });
        const ds = new DataSource(databaseOptionsFromUrl(scratch.url) as never);
        await ds.initialize();
        try {
          // The consumer has joined once an empty topic's warm-up record is applied.
          const warm = randomUUID();
          const send = (ids: string[]) =>
            producer.sendBatch({
              acks: -1,
              topicMessages: [
                {
                  topic,
                  messages: ids.map((id) => ({
                    key: id,
                    value: JSON.stringify({
                      paymentId: id,
                      tenantId: 'default',
                      amount: 1,
                      currency: 'EUR',
                      customerId: 'bench',
                      capturedAt: new Date().toISOString(),
                    }),
                    headers: { 'message-id': id, 'message-type': 'payment.captured' },
                  })),
                },
              ],
            });
          const processed = async () =>
            Number(
              (
                await ds.query(
                  `SELECT COUNT(*) AS n FROM inbox_messages WHERE consumer = 'ledger' AND status = 'processed'`,
                )
              )[0].n,
            );
          await send([warm]);
          const warmDeadline = Date.now() + 60_000;
          while ((await processed()) < 1) {
            if (Date.now() > warmDeadline) throw new Error('the consumer never applied a record');
            await new Promise((r) => setTimeout(r, 100));
          }
          const ids = Array.from({ length: n }, () => randomUUID());
          for (let i = 0; i < n; i += 1000) await send(ids.slice(i, i + 1000));
          const cpu0 = cpuTimeMs([app.child.pid!]);
          const t0 = performance.now();
          // Produced first, then timed: the consumer's work only.
          const deadline = Date.now() + 180_000;
          while ((await processed()) < n + 1) {
            if (Date.now() > deadline) {
              throw new Error(`only ${await processed()} of ${n + 1} applied`);
            }
            await new Promise((r) => setTimeout(r, 50));
          }
          const ms = performance.now() - t0;
          const cpu = cpuTimeMs([app.child.pid!]) - cpu0;
          results[mode].push({ msgPerSec: (n / ms) * 1000, cpuMsPerMsg: cpu / n });
          ctx.log(
            `round ${round + 1} ${mode}: ${fmt((n / ms) * 1000)} msg/s, app CPU ${fmt(cpu / n, 2)} ms/msg`,
          );
        } finally {
          await ds.destroy();
          app.child.kill('SIGKILL');
          await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
          await scratch.drop();
        }
      }
    }
    const median = (xs: number[]) => percentile(xs, 0.5);
    return {
      tables: [
        {
          title: `Inbox consumer on Kafka (sample app ledger, PostgreSQL, 3 partitions, replication 3; ${n} records; median of ${rounds} rounds)`,
          columns: ['offsets', 'msg/s (median)', 'msg/s per round', 'app CPU ms / msg'],
          rows: (Object.keys(results) as Mode[]).map((m) => [
            LABEL[m],
            fmt(median(results[m].map((r) => r.msgPerSec))),
            results[m].map((r) => fmt(r.msgPerSec)).join(' / '),
            fmt(median(results[m].map((r) => r.cpuMsPerMsg)), 2),
          ]),
        },
      ],
      notes: [
        "The records are produced before the clock starts (the consumer has joined and applied a warm-up record): the time is the consumer's (fetch, inbox claim + ledger INSERT + commit per record, offset commits).",
        'PostgreSQL, the 3 Kafka JVMs and the app share the 2 cores.',
      ],
      data: { n, rounds, results },
    };
  },
};

export default suite;
