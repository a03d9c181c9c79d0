import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { type ClientProxy, ClientProxyFactory, Transport } from '@nestjs/microservices';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import {
  ClientProxyPublisher,
  FunctionPublisher,
  inProcessPublisher,
  KafkaPublisher,
  OutboxRelay,
  OutboxService,
} from '../../lib';
import type { OutboxMessage, OutboxPublisher } from '../../lib';
import { DatabaseService } from '../../lib/persistence/database.service';
import { executorFor } from '../../lib/persistence/sql-executor';
import { installBenchTracing } from '../support/bench-tracing';
import { BenchInProcessHandler, setInProcessHook } from './in-process-handler';
import { RelayBenchModule } from './relay-bench.module';

/**
 * The system under test of bench/outbox-relay, in its own process (forked by the suite, driven
 * over IPC). Env: DB_URL; PUBLISHER=memory|remote|in-process|rabbitmq|kafka (+ CONFIRM_MS; RABBITMQ_URL,
 * RELAY_QUEUE (the RabbitMQ queue or the Kafka topic); KAFKA_BROKERS);
 * OUTBOX_BATCH_SIZE; WAKE=on|off; POLL_MS. The relay is built stopped; commands:
 * - start / stop: run the relay loop (throughput runs: the suite watches the table drain);
 * - latency {count, gapMs}: commits `count` one-message transactions, `gapMs` apart, here, with
 *   the relay running, and returns commit→publish-confirm latencies;
 * - claim {iterations, limit, ordered}: times the claim statement (claim, then release) on
 *   whatever the table holds.
 */
type Command =
  | { cmd: 'start' }
  | { cmd: 'stop' }
  | { cmd: 'latency'; count: number; gapMs: number }
  | { cmd: 'claim'; iterations: number; limit: number; ordered: boolean };

const committedAt = new Map<string, number>();
const latencies: number[] = [];
let published = 0;

function publisherFromEnv(): { publisher: OutboxPublisher; client?: ClientProxy } {
  const record = (m: OutboxMessage) => {
    published++;
    const t = committedAt.get(m.id);
    if (t !== undefined) {
      latencies.push(performance.now() - t);
      committedAt.delete(m.id);
    }
  };
  if (process.env.PUBLISHER === 'rabbitmq') {
    const client = ClientProxyFactory.create({
      transport: Transport.RMQ,
      options: {
        urls: [process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672'],
        queue: process.env.RELAY_QUEUE ?? 'bench-outbox',
        queueOptions: { durable: true },
        persistent: true,
      },
    });
    const inner = new ClientProxyPublisher(client);
    const publisher: OutboxPublisher = {
      publish: (m) => inner.publish(m).then(() => record(m)),
      publishBatch: async (ms) => {
        const outcomes = await inner.publishBatch(ms);
        ms.forEach((m, i) => !outcomes[i] && record(m));
        return outcomes;
      },
    };
    return { publisher, client };
  }
  if (process.env.PUBLISHER === 'kafka') {
    const inner = new KafkaPublisher({
      brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
      topic: process.env.RELAY_QUEUE ?? 'bench-outbox',
      clientId: 'bench-relay',
    });
    const publisher: OutboxPublisher = {
      messagingSystem: 'kafka',
      publish: (m) => inner.publish(m).then(() => record(m)),
      publishBatch: async (ms) => {
        const outcomes = await inner.publishBatch(ms);
        ms.forEach((m, i) => !outcomes[i] && record(m));
        return outcomes;
      },
    };
    process.once('disconnect', () => void inner.close());
    return { publisher };
  }
  if (process.env.PUBLISHER === 'in-process') {
    // @OnOutboxMessage handlers in this process: one transaction per message with its inbox record.
    setInProcessHook(record);
    return { publisher: inProcessPublisher() };
  }
  if (process.env.PUBLISHER === 'remote') {
    // A broker across a network: each message is confirmed CONFIRM_MS later (no CPU spent).
    const delay = Number(process.env.CONFIRM_MS ?? 10);
    return {
      publisher: new FunctionPublisher(async (m) => {
        await new Promise((r) => setTimeout(r, delay));
        record(m);
      }),
    };
  }
  return { publisher: new FunctionPublisher(record) };
}

async function main() {
  // BENCH_TRACING=on: the tracing SDK with a no-op exporter (the "tracing on" rows).
  installBenchTracing();
  const dbUrl = process.env.DB_URL;
  if (!dbUrl) throw new Error('DB_URL is required');
  const { publisher, client } = publisherFromEnv();
  const app = await NestFactory.createApplicationContext(
    RelayBenchModule.register(
      dbUrl,
      {
        relayEnabled: false,
        publisher,
        batchSize: Number(process.env.OUTBOX_BATCH_SIZE ?? 100),
        pollIntervalMs: Number(process.env.POLL_MS ?? 1000),
        wakeOnCommit: process.env.WAKE !== 'off',
      },
      process.env.PUBLISHER === 'in-process' ? [BenchInProcessHandler] : [],
    ),
    { logger: ['error', 'warn'] },
  );
  await app.init();
  if (client) await client.connect();
  const relay = app.get(OutboxRelay);
  const outbox = app.get(OutboxService);
  const txHost = app.get<TransactionHost<TransactionalAdapterTypeOrm>>(TransactionHost);
  const db = app.get(DatabaseService);
  const reply = (msg: object) => process.send!(msg);

  process.on('message', async (c: Command) => {
    try {
      if (c.cmd === 'start') {
        published = 0;
        relay.start(publisher);
        reply({ ok: 'started' });
      } else if (c.cmd === 'stop') {
        await relay.stop();
        reply({ ok: 'stopped', published });
      } else if (c.cmd === 'latency') {
        latencies.length = 0;
        relay.start(publisher);
        for (let i = 0; i < c.count; i++) {
          const id = randomUUID();
          await txHost.withTransaction(() =>
            outbox.add({ id, type: 'bench.latency', payload: { i } }),
          );
          committedAt.set(id, performance.now());
          await new Promise((r) => setTimeout(r, c.gapMs));
        }
        const deadline = Date.now() + 10_000;
        while (latencies.length < c.count && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20));
        }
        await relay.stop();
        reply({ ok: 'latency', latencies: [...latencies] });
      } else if (c.cmd === 'claim') {
        const exec = executorFor(db.dataSource.manager);
        const sql = db.dialect.outbox;
        const inTx = <T>(fn: (e: typeof exec) => Promise<T>) =>
          db.dataSource.transaction((em) => fn(executorFor(em)));
        const times: number[] = [];
        let claimed = 0;
        for (let i = 0; i < c.iterations; i++) {
          const owner = `bench#${i}`;
          const t = performance.now();
          const rows = await sql.claim(exec, inTx, {
            owner,
            limit: c.limit,
            leaseMs: 30_000,
            ordered: c.ordered,
          });
          times.push(performance.now() - t);
          claimed += rows.length;
          await sql.release(
            exec,
            rows.map((r) => r.seq),
            owner,
          );
        }
        reply({ ok: 'claim', times, claimed });
      }
    } catch (e) {
      reply({ error: String((e as Error)?.stack ?? e) });
    }
  });
  process.once('disconnect', () => {
    void app
      .close()
      .then(() => client?.close())
      .finally(() => process.exit(0));
  });
  reply({ ok: 'ready' });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
