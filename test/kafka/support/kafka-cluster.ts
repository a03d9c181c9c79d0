import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { faultPreload } from '../../support/fault-preload';
import { BASE_ENV, faultDbUrl } from '../../faults/support/fault-cluster';

/**
 * The 3-node Kafka cluster of the Kafka suite, started by .ci/kafka.sh (or by hand) with
 * `KAFKA_NODES=3 ../shared/kafka/start.sh`. KAFKA_BROKERS lists its client ports; KAFKA_SCRIPTS
 * is the folder of start.sh (default ../shared/kafka beside the repository); KAFKA_DATA_DIR
 * where its nodes keep their pid files (default /opt/kafka-data).
 */
export const KAFKA_BROKERS = (
  process.env.KAFKA_BROKERS ?? '127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094'
).split(',');
const SCRIPTS =
  process.env.KAFKA_SCRIPTS ?? join(__dirname, '..', '..', '..', '..', 'shared', 'kafka');
const DATA_DIR = process.env.KAFKA_DATA_DIR ?? '/opt/kafka-data';
const NODES = 3;

export const kafka = new Kafka({
  clientId: 'kafka-suite',
  brokers: KAFKA_BROKERS,
  logLevel: logLevel.NOTHING,
});

export const uniqueName = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/**
 * The sample app's environment on this cluster: the fault suites' base, the database at `dbUrl`,
 * `BROKER_QUEUE` = `topic`. The relay's first publish (connect, producer id, metadata) on a loaded
 * machine can outlast BASE_ENV's 1.5 s time-out, hence 10 s (and a lease above it); a batch that
 * timed out is published again (at least once).
 */
export function sampleAppKafkaEnv(dbUrl: string, topic: string): Record<string, string> {
  return {
    ...BASE_ENV,
    DB_URL: faultDbUrl(dbUrl),
    BROKER_URL: 'kafka://127.0.0.1:9092',
    BROKER_QUEUE: topic,
    OUTBOX_PUBLISH_TIMEOUT_MS: '10000',
    OUTBOX_LEASE_MS: '30000',
  };
}

/** Creates a topic (replication factor 3, the cluster's default) and waits for its leaders. */
export async function createTopic(topic: string, partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: [{ topic, numPartitions: partitions }],
      waitForLeaders: true,
    });
  } finally {
    await admin.disconnect();
  }
}

export async function deleteTopic(topic: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [topic] });
  } catch {
    // best effort: a broker may be down in a failed test
  } finally {
    await admin.disconnect();
  }
}

/** The node id leading a partition of the topic. */
export async function leaderOf(topic: string, partition = 0): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const md = await admin.fetchTopicMetadata({ topics: [topic] });
    const p = md.topics[0].partitions.find((x) => x.partitionId === partition);
    if (!p) throw new Error(`no partition ${partition} in ${topic}`);
    return p.leader;
  } finally {
    await admin.disconnect();
  }
}

const pidFile = (node: number) => join(DATA_DIR, `${NODES}-node`, `node-${node}`, 'kafka.pid');

/** The pid of a running node. */
export function nodePid(node: number): number {
  const pid = Number(readFileSync(pidFile(node), 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no pid in ${pidFile(node)}`);
  return pid;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** SIGKILLs a node (a broker + controller JVM) and waits until it is gone. */
export async function killNode(node: number): Promise<void> {
  const pid = nodePid(node);
  process.kill(pid, 'SIGKILL');
  while (alive(pid)) await new Promise((r) => setTimeout(r, 50));
}

/** SIGKILLs every node of the cluster. */
export async function killCluster(): Promise<void> {
  for (let n = 1; n <= NODES; n++) if (existsSync(pidFile(n))) await killNode(n).catch(() => {});
}

/** Starts the nodes that are down (start.sh restarts dead nodes) and waits until all answer. */
export function startCluster(): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      [join(SCRIPTS, 'start.sh')],
      { env: { ...process.env, KAFKA_NODES: String(NODES) }, timeout: 300_000 },
      (error, _stdout, stderr) =>
        error ? reject(new Error(`start.sh failed: ${error.message}\n${stderr}`)) : resolve(),
    );
  });
}

/** Records written to the topic so far (the sum of its partitions' high watermarks). */
export async function recordsIn(topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((n, p) => n + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}

/** Records of the topic a consumer group has committed (the sum of its committed offsets). */
export async function committedBy(groupId: string, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return (t?.partitions ?? []).reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
  } finally {
    await admin.disconnect();
  }
}

/**
 * A sample-app process armed with a crash point (EO_TEST_FAULTS), not waited for: it may reach
 * its point while it boots (a relay publishes the pending rows at once). Resolves with its
 * output once it has exited.
 */
export function spawnVictim(env: Record<string, string>): {
  child: ChildProcess;
  exited: Promise<string>;
} {
  const main = join(__dirname, '..', '..', '..', 'dist', 'sample-app', 'main.js');
  const full = { ...process.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'json', ...env };
  const child = spawn(process.execPath, [...faultPreload(full), main], {
    env: { ...full, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<string>((resolve) => child.once('exit', () => resolve(out)));
  return { child, exited };
}
