import * as amqp from 'amqplib';
import { randomUUID } from 'node:crypto';
import { type AppProcess, spawnSampleApp } from '../../support/sample-app';

export const RABBIT_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/**
 * Trials per crash point and sizes of the storms. The defaults keep `npm run test:faults` within
 * its CI budget on a quiet 2-core machine; FAULT_TRIALS (and FAULT_STORM_KEYS) raise them for
 * longer local runs.
 */
export const FAULT_TRIALS = Math.max(1, Number(process.env.FAULT_TRIALS ?? 8));

/** Environment every sample-app process of the fault suite gets (short leases: lapses are waited out). */
export const BASE_ENV = {
  LOG_LEVEL: 'warn',
  OUTBOX_POLL_INTERVAL_MS: '200',
  OUTBOX_LEASE_MS: '3000',
  OUTBOX_PUBLISH_TIMEOUT_MS: '1500',
  OUTBOX_BACKOFF_BASE_MS: '200',
  OUTBOX_BACKOFF_MAX_MS: '3000',
};

/**
 * Pooled connections per process on SQL Server (Babelfish): 4 (FAULT_MSSQL_POOL), where the
 * sample app's default is 10. Each pooled connection is a new Babelfish backend, and a new
 * backend pays for its T-SQL parser's first parses of every batch it runs: measured on 4.3.0 here
 * (2 cores, 2026-11-27), 210 ms of server CPU to connect and about 1.8 s for the reservation
 * batch's first 30 runs against 7 ms each once warm. Storms and crash trials start new processes
 * again and again; with 10 connections each, 4 to 8 processes spent minutes of the machine's two
 * cores warming backends, requests waited past the driver's 15 s and answered 503, and their
 * retries piled on (CI of e2378fb: the storms file took 1630 s and failed). 4 connections per
 * process still put 16 to 32 transactions on one key at once. A URL that sets `pool` keeps it.
 */
export const MSSQL_POOL = Math.max(1, Number(process.env.FAULT_MSSQL_POOL ?? 4));

/** The DB_URL a fault-suite process gets: `dbUrl`, with MSSQL_POOL on SQL Server. */
export function faultDbUrl(dbUrl: string): string {
  if (!/^(mssql|sqlserver):/.test(dbUrl)) return dbUrl;
  const u = new URL(dbUrl);
  if (!u.searchParams.has('pool')) u.searchParams.set('pool', String(MSSQL_POOL));
  return u.toString();
}

/** Resolves when the process has exited (killed or not). */
export const exited = (p: AppProcess): Promise<void> =>
  new Promise((resolve) =>
    p.child.exitCode !== null || p.child.signalCode !== null
      ? resolve()
      : p.child.once('exit', () => resolve()),
  );

export const isAlive = (p: AppProcess) => p.child.exitCode === null && p.child.signalCode === null;

/**
 * Sample-app processes (dist/sample-app/main.js) on one database and one RabbitMQ queue: the
 * relays of all of them publish `payment.captured` there and the ledger consumers of all of them
 * share it. Keeps track of every process so the suite ends them all.
 */
export class FaultCluster {
  readonly queue = `faults-${randomUUID()}`;
  readonly processes: AppProcess[] = [];

  constructor(
    readonly dbUrl: string,
    private readonly brokerUrl: () => string = () => RABBIT_URL,
    private readonly env: Record<string, string> = {},
  ) {}

  async spawn(env: Record<string, string> = {}): Promise<AppProcess> {
    const p = await spawnSampleApp({
      ...BASE_ENV,
      DB_URL: faultDbUrl(this.dbUrl),
      BROKER_URL: this.brokerUrl(),
      BROKER_QUEUE: this.queue,
      ...this.env,
      ...env,
    });
    this.processes.push(p);
    return p;
  }

  /** A process that kills itself (SIGKILL) at the fault point `spec` (`name` or `name@N`). */
  victim(spec: string, env: Record<string, string> = {}): Promise<AppProcess> {
    return this.spawn({ ...env, EO_TEST_FAULTS: spec });
  }

  /** Ready messages still in the queue (not counting deliveries in flight to consumers). */
  async queueDepth(): Promise<number> {
    const conn = await amqp.connect(RABBIT_URL);
    try {
      const ch = await conn.createChannel();
      const { messageCount } = await ch.checkQueue(this.queue);
      return messageCount;
    } catch {
      return 0; // not declared yet
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.kill('SIGKILL')));
    const conn = await amqp.connect(RABBIT_URL).catch(() => undefined);
    if (conn) {
      const ch = await conn.createChannel();
      await ch.deleteQueue(this.queue).catch(() => undefined);
      await conn.close().catch(() => undefined);
    }
  }
}

/** Asserts that a victim really died at its fault point (SIGKILL by itself, the point's line in its output). */
export async function diedAt(p: AppProcess, point: string, timeoutMs = 60_000): Promise<boolean> {
  const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
  const r = await Promise.race([exited(p).then(() => 'exited' as const), timer]);
  if (r === 'timeout') return false;
  return p.child.signalCode === 'SIGKILL' && p.output().includes(`fault point ${point} reached`);
}

/** `describe.each` over the databases of the run that a scenario supports (none: nothing declared). */
export function describeEachDatabase<K extends string>(
  kinds: K[],
  title: string,
  fn: (kind: K) => void,
): void {
  if (kinds.length) describe.each(kinds)(title, fn);
}
