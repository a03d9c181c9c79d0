import * as amqp from 'amqplib';
import type { Kafka } from 'kafkajs';
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import type {
  BenchCheck,
  BenchContext,
  BenchReport,
  BenchSuite,
  BenchTable,
} from '../support/bench-suite';
import { percentile } from '../support/load';
import { createScratchDatabase, isReachable } from '../support/scratch-database';
import { cpuTimeMs, machineCpuMs } from '../support/server-process';
import { IN_PROCESS_EFFECTS_DDL } from './in-process-handler';

/**
 * bench/outbox-relay: the transactional outbox relay on PostgreSQL.
 *
 * 1. Throughput: N pending messages are inserted, then one relay process (or two) drains them;
 *    msg/s = N / time until nothing is pending. To an in-memory publisher, to an in-memory
 *    publisher that confirms each message 10 ms later (a broker across a network: the relay waits
 *    without using CPU), and to RabbitMQ with publisher confirms (durable queue, persistent
 *    messages). One and two relays alternate in rounds; the two-relay figure is compared with the
 *    one-relay figure of the same round. Machine CPU busy % per drain shows when the 2-core
 *    machine (PostgreSQL, RabbitMQ and the relays together) is the limit.
 * 2. Commit-to-publish latency: one-message transactions committed in the relay's process, 20 ms
 *    apart; latency = publisher confirmation - commit returned. With the in-process wake-up and
 *    without it (then the relay finds the message at its next poll, every 1000 ms).
 * 3. Claim statement time with 1,000,000 sent rows and 10,000 pending in the table.
 * Every relay runs in its own process (dist/bench/outbox-relay/relay-worker.js), driven over IPC.
 */

const SUITE_LIMIT_MS = 6 * 60_000;
const RABBIT_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
/** A running 3-node Kafka cluster (KAFKA_NODES=3 ../shared/kafka/start.sh) for the 3-node rows. */
const KAFKA_BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094';
/**
 * The folder of the Kafka scripts (start.sh, stop.sh): the bench starts a single-node cluster of
 * its own with them, on KAFKA_SINGLE_PORT (9192; controller +10000) and a data dir of its own,
 * beside the 3-node one, and stops and wipes it at the end. Default ../shared/kafka beside the
 * repository.
 */
const KAFKA_SCRIPTS =
  process.env.KAFKA_SCRIPTS ?? join(__dirname, '..', '..', '..', '..', 'shared', 'kafka');
const KAFKA_SINGLE_PORT = Number(process.env.KAFKA_SINGLE_PORT ?? 9192);
/** Confirmation delay of the "remote broker" publisher (a broker a few ms away on a network). */
const REMOTE_CONFIRM_MS = 10;

interface Params {
  messages: number;
  remoteMessages: number;
  rabbitMessages: number;
  kafkaMessages: number;
  rounds: number;
  batch: number;
  latencyCount: number;
  sentRows: number;
  pendingRows: number;
  claimIterations: number;
  skipRabbit: boolean;
  skipKafka: boolean;
  skipClaim: boolean;
}

function parseParams(ctx: BenchContext): Params {
  const get = (name: string) =>
    ctx.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const num = (name: string, dflt: number) => {
    const v = get(name);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) {
      throw new Error(`--${name} must be a positive number, got "${v}"`);
    }
    return Math.round(n);
  };
  const q = ctx.quick;
  return {
    messages: num('messages', q ? 2000 : 30_000),
    remoteMessages: num('remote-messages', q ? 1000 : 20_000),
    rabbitMessages: num('rabbit-messages', q ? 1000 : 20_000),
    kafkaMessages: num('kafka-messages', q ? 1000 : 20_000),
    rounds: num('rounds', q ? 1 : 3),
    batch: num('batch', 100),
    latencyCount: num('latency-count', q ? 30 : 250),
    sentRows: num('sent-rows', q ? 20_000 : 1_000_000),
    pendingRows: num('pending-rows', q ? 2000 : 10_000),
    claimIterations: num('claim-iterations', q ? 20 : 200),
    skipRabbit: ctx.args.includes('--no-rabbit'),
    skipKafka: ctx.args.includes('--no-kafka'),
    skipClaim: ctx.args.includes('--no-claim'),
  };
}

/** A relay worker process and a request/reply channel to it. */
interface Worker {
  child: ChildProcess;
  request<T = any>(msg: object, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

async function startWorker(env: Record<string, string>): Promise<Worker> {
  const child = fork(join(__dirname, 'relay-worker.js'), [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiters: Array<(m: any) => void> = [];
  child.on('message', (m) => waiters.shift()?.(m));
  const next = (timeoutMs: number) =>
    new Promise<any>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('relay worker did not answer')), timeoutMs);
      waiters.push((m) => {
        clearTimeout(t);
        if (m?.error) reject(new Error(m.error));
        else resolve(m);
      });
    });
  await next(60_000);
  return {
    child,
    request: (msg, timeoutMs = 120_000) => {
      const p = next(timeoutMs);
      child.send(msg);
      return p;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        child.disconnect();
      }),
  };
}

async function openDb(url: string): Promise<DataSource> {
  const ds = new DataSource({ ...(databaseOptionsFromUrl(url) as any), extra: { max: 2 } });
  await ds.initialize();
  return ds;
}

/** Inserts `n` pending messages (one statement per 50,000). */
async function insertPending(ds: DataSource, n: number, type: string): Promise<void> {
  for (let done = 0; done < n; done += 50_000) {
    const k = Math.min(50_000, n - done);
    await ds.query(
      `INSERT INTO outbox_messages (id, type, payload, headers, partition_key, status, attempts, next_attempt_at, created_at)
       SELECT gen_random_uuid()::text, $1, '{"amount":12.5,"currency":"EUR","customerId":"bench"}', NULL, 'p-' || (g % 1000), 'pending', 0, now(), now()
         FROM generate_series(1, $2::int) AS g`,
      [type, k],
    );
  }
}

/** Whether any row is still pending (cheap: the first entry of the partial index). */
const anyPending = async (ds: DataSource) =>
  (await ds.query(`SELECT 1 AS x FROM outbox_messages WHERE status = 'pending' LIMIT 1`)).length >
  0;

interface DrainResult {
  relays: number;
  msgPerSec: number;
  ms: number;
  cpuMsPer1000: number;
  /** Machine-wide CPU busy during the drain (all processes, both cores), in %. */
  machineBusyPct: number;
}

/** Starts the given workers' relays and waits until nothing is pending. */
async function drain(
  ds: DataSource,
  workers: Worker[],
  n: number,
  limitMs: number,
): Promise<DrainResult> {
  const pids = workers.map((w) => w.child.pid!);
  const cpu0 = cpuTimeMs(pids);
  const machine0 = machineCpuMs();
  const t0 = performance.now();
  await Promise.all(workers.map((w) => w.request({ cmd: 'start' })));
  const deadline = Date.now() + limitMs;
  while (await anyPending(ds)) {
    if (Date.now() > deadline) {
      throw new Error(`the relays did not drain ${n} messages in ${limitMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  const ms = performance.now() - t0;
  const machine1 = machineCpuMs();
  const replies = await Promise.all(
    workers.map((w) => w.request<{ published: number }>({ cmd: 'stop' })),
  );
  const publishedTotal = replies.reduce((a, r) => a + r.published, 0);
  if (publishedTotal < n) throw new Error(`only ${publishedTotal} of ${n} messages were published`);
  return {
    relays: workers.length,
    ms,
    msgPerSec: (n / ms) * 1000,
    cpuMsPer1000: ((cpuTimeMs(pids) - cpu0) / n) * 1000,
    machineBusyPct:
      machine0 && machine1
        ? ((machine1.busy - machine0.busy) / Math.max(1, machine1.total - machine0.total)) * 100
        : NaN,
  };
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const median = (xs: number[]) => percentile(xs, 0.5);

async function throughput(
  ctx: BenchContext,
  ds: DataSource,
  dbUrl: string,
  kind: 'memory' | 'remote' | 'in-process' | 'rabbitmq' | 'kafka-3' | 'kafka-1',
  n: number,
  p: Params,
  kafkaBrokers = KAFKA_BROKERS,
): Promise<{ one: DrainResult[]; two: DrainResult[]; traced: DrainResult[] }> {
  const queue = `bench-outbox-${randomUUID()}`;
  if (kind.startsWith('kafka')) {
    // 3 partitions; on 3 nodes replication factor 3 (acks from the 2+ in-sync replicas), on the
    // single node 1 (the leader's).
    const kafka = await kafkaClient(kafkaBrokers);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [{ topic: queue, numPartitions: 3, replicationFactor: kind === 'kafka-1' ? 1 : 3 }],
      waitForLeaders: true,
    });
    ctx.onCleanup(async () => {
      await admin.deleteTopics({ topics: [queue] }).catch(() => undefined);
      await admin.disconnect();
    });
  }
  const env = {
    DB_URL: dbUrl,
    PUBLISHER: kind.startsWith('kafka') ? 'kafka' : kind,
    KAFKA_BROKERS: kafkaBrokers,
    CONFIRM_MS: String(REMOTE_CONFIRM_MS),
    RELAY_QUEUE: queue,
    OUTBOX_BATCH_SIZE: String(p.batch),
    POLL_MS: '50',
  };
  const workers = [await startWorker(env), await startWorker(env)];
  // In-memory publisher: a third relay with the tracing SDK (no-op exporter), one relay alone.
  const tracedWorker =
    kind === 'memory' ? await startWorker({ ...env, BENCH_TRACING: 'on' }) : undefined;
  if (tracedWorker) workers.push(tracedWorker);
  let rabbit: amqp.ChannelModel | undefined;
  ctx.onCleanup(async () => {
    await Promise.all(workers.map((w) => w.stop()));
  });
  if (kind === 'rabbitmq') {
    rabbit = await amqp.connect(RABBIT_URL);
    ctx.onCleanup(async () => {
      try {
        const ch = await rabbit!.createChannel();
        await ch.deleteQueue(queue);
        await rabbit!.close();
      } catch {
        // already closed
      }
    });
  }
  const one: DrainResult[] = [];
  const two: DrainResult[] = [];
  const traced: DrainResult[] = [];
  const runs: Array<1 | 2 | 'traced'> = tracedWorker ? [1, 'traced', 2] : [1, 2];
  try {
    for (let round = 0; round < p.rounds; round++) {
      for (const run of round % 2 === 0 ? runs : [...runs].reverse()) {
        await insertPending(ds, n, `bench.${kind}`);
        await ds.query('ANALYZE outbox_messages');
        const relays = run === 'traced' ? [tracedWorker!] : workers.slice(0, run);
        const r = await drain(ds, relays, n, 120_000);
        (run === 1 ? one : run === 2 ? two : traced).push(r);
        ctx.log(
          `${kind} round ${round + 1}: ${run === 'traced' ? '1 relay, tracing on,' : `${run} relay(s)`} ${fmt(r.msgPerSec)} msg/s (${fmt(r.ms)} ms for ${n}, machine CPU ${fmt(r.machineBusyPct)} % busy)`,
        );
        if (rabbit) {
          const ch = await rabbit.createChannel();
          await ch.purgeQueue(queue);
          await ch.close();
        }
      }
    }
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
  return { one, two, traced };
}

async function kafkaClient(brokers = KAFKA_BROKERS): Promise<Kafka> {
  const { Kafka, logLevel } = await import('kafkajs');
  return new Kafka({
    clientId: 'bench-admin',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
    retry: { retries: 1 },
  });
}

/** Whether a Kafka cluster answers at `brokers` (an admin connection); throws why not. */
async function kafkaReachable(brokers: string): Promise<void> {
  const admin = (await kafkaClient(brokers)).admin();
  await admin.connect();
  await admin.disconnect();
}

/** Runs a Kafka script (start.sh / stop.sh) of KAFKA_SCRIPTS; resolves with its stdout. */
function kafkaScript(script: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      'bash',
      [join(KAFKA_SCRIPTS, script), ...args],
      { env: { ...process.env, ...env }, timeout: 400_000 },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`${script}: ${stderr.trim().split('\n').pop() ?? error.message}`))
          : resolve(stdout),
    ),
  );
}

/**
 * A real single-node Kafka cluster (KRaft, replication factor 1) started for the bench with
 * KAFKA_SCRIPTS/start.sh on its own port and data dir (the 3-node cluster keeps running), stopped
 * and wiped at cleanup: its bootstrap broker. Throws why it cannot (no scripts, start failed).
 */
async function startSingleNodeKafka(ctx: BenchContext): Promise<string> {
  if (!existsSync(join(KAFKA_SCRIPTS, 'start.sh'))) {
    throw new Error(`no ${KAFKA_SCRIPTS}/start.sh (KAFKA_SCRIPTS)`);
  }
  const env = {
    KAFKA_NODES: '1',
    KAFKA_PORT: String(KAFKA_SINGLE_PORT),
    KAFKA_CONTROLLER_PORT: String(KAFKA_SINGLE_PORT + 10_000),
    KAFKA_DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-kafka-1-node-')),
  };
  ctx.onCleanup(async () => {
    await kafkaScript('stop.sh', ['--wipe'], env).catch(() => undefined);
  });
  const out = await kafkaScript('start.sh', [], env);
  const brokers = /^KAFKA_BROKERS=(.+)$/m.exec(out)?.[1]?.trim();
  if (!brokers) throw new Error(`start.sh printed no KAFKA_BROKERS`);
  return brokers;
}

async function latency(
  ctx: BenchContext,
  dbUrl: string,
  p: Params,
): Promise<Record<'wake' | 'poll', number[]>> {
  const out = { wake: [] as number[], poll: [] as number[] };
  for (const mode of ['wake', 'poll'] as const) {
    const w = await startWorker({
      DB_URL: dbUrl,
      PUBLISHER: 'memory',
      WAKE: mode === 'wake' ? 'on' : 'off',
      POLL_MS: '1000',
    });
    try {
      const r = await w.request<{ latencies: number[] }>(
        { cmd: 'latency', count: p.latencyCount, gapMs: 20 },
        180_000,
      );
      out[mode] = r.latencies.sort((a, b) => a - b);
      ctx.log(
        `latency ${mode}: p50 ${fmt(percentile(out[mode], 0.5), 1)} ms, p99 ${fmt(percentile(out[mode], 0.99), 1)} ms`,
      );
    } finally {
      await w.stop();
    }
  }
  return out;
}

async function claimTiming(ctx: BenchContext, ds: DataSource, dbUrl: string, p: Params) {
  ctx.log(`filling the table: ${fmt(p.sentRows)} sent rows, ${fmt(p.pendingRows)} pending`);
  await ds.query(`DELETE FROM outbox_messages`);
  for (let done = 0; done < p.sentRows; done += 200_000) {
    const k = Math.min(200_000, p.sentRows - done);
    await ds.query(
      `INSERT INTO outbox_messages (id, type, payload, partition_key, status, attempts, next_attempt_at, created_at, sent_at, lease_owner)
       SELECT gen_random_uuid()::text, 'bench.sent', '{"amount":12.5,"currency":"EUR","customerId":"bench"}', 'p-' || (g % 1000), 'sent', 0,
              now() - interval '1 day', now() - interval '1 day', now() - interval '1 day', 'bench#0'
         FROM generate_series(1, $1::int) AS g`,
      [k],
    );
  }
  await insertPending(ds, p.pendingRows, 'bench.pending');
  await ds.query('VACUUM ANALYZE outbox_messages');
  const w = await startWorker({ DB_URL: dbUrl, PUBLISHER: 'memory' });
  try {
    const out: Record<string, number[]> = {};
    for (const ordered of [false, true]) {
      const r = await w.request<{ times: number[]; claimed: number }>(
        { cmd: 'claim', iterations: p.claimIterations, limit: p.batch, ordered },
        180_000,
      );
      if (r.claimed < p.claimIterations * Math.min(p.batch, p.pendingRows)) {
        throw new Error(
          `claims returned ${r.claimed} rows, expected ${p.claimIterations * p.batch}`,
        );
      }
      out[ordered ? 'ordered' : 'unordered'] = r.times.sort((a, b) => a - b);
    }
    return out;
  } finally {
    await w.stop();
  }
}

const suite: BenchSuite = {
  description:
    'Outbox relay on PostgreSQL: msg/s (1 and 2 relays, in-memory and RabbitMQ with confirms), commit-to-publish latency, claim time on a 1M-row table',
  maxDurationMs: SUITE_LIMIT_MS,

  async run(ctx): Promise<BenchReport> {
    const p = parseParams(ctx);
    if (!(await isReachable('postgres'))) {
      return { tables: [], notes: ['PostgreSQL is not reachable on loopback: suite skipped.'] };
    }
    const scratch = await createScratchDatabase('postgres');
    ctx.onCleanup(() => scratch.drop());
    const migrate = await startWorker({ DB_URL: scratch.url, PUBLISHER: 'memory' }); // runs the migrations
    await migrate.stop();
    const ds = await openDb(scratch.url);
    ctx.onCleanup(() => ds.destroy());
    const version = String((await ds.query('SHOW server_version'))[0].server_version);
    const load0 = loadavg()[0];
    const cpu0 = machineCpuMs();

    const memory = await throughput(ctx, ds, scratch.url, 'memory', p.messages, p);
    const remote = await throughput(ctx, ds, scratch.url, 'remote', p.remoteMessages, p);
    // In-process @OnOutboxMessage handlers: one transaction per message (an insert + its inbox record).
    await ds.query(IN_PROCESS_EFFECTS_DDL);
    const inProcess = await throughput(ctx, ds, scratch.url, 'in-process', p.remoteMessages, p);
    let rabbit: { one: DrainResult[]; two: DrainResult[]; traced: DrainResult[] } | undefined;
    const notes: string[] = [];
    if (!p.skipRabbit) {
      try {
        const c = await amqp.connect(RABBIT_URL);
        await c.close();
        rabbit = await throughput(ctx, ds, scratch.url, 'rabbitmq', p.rabbitMessages, p);
      } catch (e) {
        notes.push(`RabbitMQ: skipped (${(e as Error).message}).`);
      }
    }
    const kafka: Record<
      'nodes3' | 'nodes1',
      { one: DrainResult[]; two: DrainResult[] } | undefined
    > = { nodes3: undefined, nodes1: undefined };
    if (!p.skipKafka) {
      // The 3-node cluster must be running (KAFKA_BROKERS); the single node the bench starts.
      try {
        await kafkaReachable(KAFKA_BROKERS);
        kafka.nodes3 = await throughput(ctx, ds, scratch.url, 'kafka-3', p.kafkaMessages, p);
      } catch (e) {
        notes.push(
          `Kafka, 3 nodes: skipped (${(e as Error).message}; KAFKA_BROKERS=${KAFKA_BROKERS}; start it with KAFKA_NODES=3 ../shared/kafka/start.sh).`,
        );
      }
      try {
        const single = await startSingleNodeKafka(ctx);
        ctx.log(`kafka: a single-node cluster up on ${single}`);
        kafka.nodes1 = await throughput(
          ctx,
          ds,
          scratch.url,
          'kafka-1',
          p.kafkaMessages,
          p,
          single,
        );
      } catch (e) {
        notes.push(`Kafka, 1 node: skipped (${(e as Error).message}).`);
      }
    }
    const lat = await latency(ctx, scratch.url, p);
    const claim = p.skipClaim ? undefined : await claimTiming(ctx, ds, scratch.url, p);
    const cpu1 = machineCpuMs();
    const load1 = loadavg()[0];

    const rows: Array<Array<string | number>> = [];
    const row = (label: string, rs: DrainResult[]) =>
      rows.push([
        label,
        fmt(median(rs.map((r) => r.msgPerSec))),
        rs.map((r) => fmt(r.msgPerSec)).join(' / '),
        fmt(median(rs.map((r) => r.cpuMsPer1000)), 1),
        fmt(median(rs.map((r) => r.machineBusyPct))),
      ]);
    row('in-memory publisher, 1 relay', memory.one);
    row('in-memory publisher, 1 relay, tracing on (SDK, no-op exporter)', memory.traced);
    row('in-memory publisher, 2 relays', memory.two);
    row(`in-memory publisher confirming after ${REMOTE_CONFIRM_MS} ms, 1 relay`, remote.one);
    row(`in-memory publisher confirming after ${REMOTE_CONFIRM_MS} ms, 2 relays`, remote.two);
    row(
      'in-process @OnOutboxMessage handler (transaction + inbox record + 1 insert), 1 relay',
      inProcess.one,
    );
    row(
      'in-process @OnOutboxMessage handler (transaction + inbox record + 1 insert), 2 relays',
      inProcess.two,
    );
    if (rabbit) {
      row('RabbitMQ (publisher confirms), 1 relay', rabbit.one);
      row('RabbitMQ (publisher confirms), 2 relays', rabbit.two);
    }
    if (kafka.nodes3) {
      row('Kafka, 3 nodes, replication 3 (acks -1, min ISR 2), 1 relay', kafka.nodes3.one);
      row('Kafka, 3 nodes, replication 3 (acks -1, min ISR 2), 2 relays', kafka.nodes3.two);
    }
    if (kafka.nodes1) {
      row('Kafka, 1 node, replication 1 (acks -1 = the leader), 1 relay', kafka.nodes1.one);
      row('Kafka, 1 node, replication 1 (acks -1 = the leader), 2 relays', kafka.nodes1.two);
    }
    const tables: BenchTable[] = [
      {
        title: `Relay throughput, PostgreSQL ${version} (batch ${p.batch}; median of ${p.rounds} rounds)`,
        columns: [
          'scenario',
          'msg/s (median)',
          'msg/s per round',
          'relay CPU ms / 1000 msg',
          'machine CPU busy %',
        ],
        rows,
      },
      {
        title: `Commit-to-publish latency (${p.latencyCount} one-message transactions, 20 ms apart; poll interval 1000 ms)`,
        columns: ['relay', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
        rows: (['wake', 'poll'] as const).map((m) => [
          m === 'wake' ? 'woken on commit (default)' : 'polling only (wakeOnCommit: false)',
          fmt(percentile(lat[m], 0.5), 1),
          fmt(percentile(lat[m], 0.9), 1),
          fmt(percentile(lat[m], 0.99), 1),
          fmt(lat[m][lat[m].length - 1] ?? NaN, 1),
        ]),
      },
    ];
    if (claim) {
      tables.push({
        title: `Claim statement (${p.batch} rows) with ${fmt(p.sentRows)} sent and ${fmt(p.pendingRows)} pending rows (${p.claimIterations} claims each)`,
        columns: ['mode', 'p50 ms', 'p99 ms', 'max ms'],
        rows: Object.entries(claim).map(([mode, t]) => [
          mode,
          fmt(percentile(t, 0.5), 2),
          fmt(percentile(t, 0.99), 2),
          fmt(t[t.length - 1], 2),
        ]),
      });
    }
    const ratio = (x: { one: DrainResult[]; two: DrainResult[] }) => {
      const perRound = x.one.map((o, i) => (x.two[i]?.msgPerSec ?? NaN) / o.msgPerSec);
      return median(perRound);
    };
    const checks: BenchCheck[] = [
      {
        name: 'in-memory publisher, one relay',
        target: '>= 5,000 msg/s',
        actual: `${fmt(median(memory.one.map((r) => r.msgPerSec)))} msg/s`,
        ok: median(memory.one.map((r) => r.msgPerSec)) >= 5000,
      },
      {
        name: 'in-memory publisher, two relays vs one',
        target: '>= 1.6x',
        actual: `${fmt(ratio(memory), 2)}x`,
        ok: ratio(memory) >= 1.6,
      },
      {
        name: `publisher confirming after ${REMOTE_CONFIRM_MS} ms, two relays vs one`,
        target: '>= 1.6x',
        actual: `${fmt(ratio(remote), 2)}x`,
        ok: ratio(remote) >= 1.6,
      },
      {
        name: 'commit-to-publish p50 with the wake-up',
        target: '< 50 ms',
        actual: `${fmt(percentile(lat.wake, 0.5), 1)} ms`,
        ok: percentile(lat.wake, 0.5) < 50,
      },
    ];
    if (rabbit) {
      checks.splice(1, 0, {
        name: 'RabbitMQ with publisher confirms, one relay',
        target: '>= 2,000 msg/s',
        actual: `${fmt(median(rabbit.one.map((r) => r.msgPerSec)))} msg/s`,
        ok: median(rabbit.one.map((r) => r.msgPerSec)) >= 2000,
      });
      checks.push({
        name: 'RabbitMQ, two relays vs one',
        target: '>= 1.6x',
        actual: `${fmt(ratio(rabbit), 2)}x`,
        ok: ratio(rabbit) >= 1.6,
      });
    }
    const busy =
      cpu0 && cpu1 ? ((cpu1.busy - cpu0.busy) / (cpu1.total - cpu0.total)) * 100 : undefined;
    notes.push(
      `Machine: load average ${fmt(load0, 1)} → ${fmt(load1, 1)}${busy !== undefined ? `, CPU busy ${fmt(busy)} % over the run (all processes, 2 cores)` : ''}; PostgreSQL, RabbitMQ and the relays share the cores.`,
      'Throughput: messages inserted first, then the relays started; time until no row is pending. Each relay is its own process.',
      'Latency: measured inside the relay process from the commit returning to the publisher confirming.',
    );
    return {
      tables,
      checks,
      notes,
      data: { params: p, memory, remote, inProcess, rabbit, kafka, latency: lat, claim },
    };
  },
};

export default suite;
