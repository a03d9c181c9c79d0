import * as amqp from 'amqplib';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';

const RABBIT_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const FIXTURES = join(__dirname, '..', 'fixtures', 'inbox');

/** A consumer process (test/fixtures/inbox/consumer-process.ts) and its output. */
interface Consumer {
  child: ChildProcess;
  output(): string;
  waitFor(line: RegExp, timeoutMs?: number): Promise<void>;
  stop(signal: NodeJS.Signals): Promise<void>;
}

async function startConsumer(env: Record<string, string>): Promise<Consumer> {
  const child = spawn(
    process.execPath,
    [
      '-r',
      join(__dirname, '..', 'support', 'ts-register.js'),
      join(FIXTURES, 'consumer-process.ts'),
    ],
    {
      env: { ...process.env, RABBITMQ_URL: RABBIT_URL, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const consumer: Consumer = {
    child,
    output: () => out,
    async waitFor(line, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!line.test(out)) {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`consumer exited before ${line}:\n${out}`);
        }
        if (Date.now() > deadline) {
          throw new Error(`consumer did not print ${line} in ${timeoutMs} ms:\n${out}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    stop: (signal) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
  await consumer.waitFor(/^READY$/m);
  return consumer;
}

async function waitFor(
  probe: () => Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const lines = (out: string, re: RegExp) => out.split('\n').filter((l) => re.test(l)).length;

describe.each(databaseKinds())('inbox across consumer processes on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let conn: amqp.ChannelModel;
  let ch: amqp.ConfirmChannel;
  const consumers: Consumer[] = [];
  const queues: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    conn = await amqp.connect(RABBIT_URL);
    ch = await conn.createConfirmChannel();
  });

  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop('SIGKILL')));
  });

  afterAll(async () => {
    for (const q of queues) await ch?.deleteQueue(q).catch(() => undefined);
    await conn?.close();
    await ds?.destroy();
    await db?.drop();
  });

  const newQueue = async () => {
    const q = `inbox-proc-${randomUUID()}`;
    await ch.assertQueue(q, { durable: false });
    queues.push(q);
    return q;
  };
  const spawnConsumer = async (queue: string, env: Record<string, string> = {}) => {
    const c = await startConsumer({ DB_URL: db.url, QUEUE: queue, ...env });
    consumers.push(c);
    // The first process ran the migrations: now the tables can be read.
    ds ??= await openDataSource(db.url);
    return c;
  };
  const publish = async (queue: string, messageId: string, data: object) => {
    ch.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: 'inbox.effect', data })), {
      messageId,
    });
    await ch.waitForConfirms();
  };
  const effects = async (note: string) =>
    (
      await ds.query(`SELECT message_id FROM inbox_effects WHERE note = ${placeholder(kind, 0)}`, [
        note,
      ])
    ).length as number;
  const inboxRow = async (id: string) =>
    (
      await ds.query(
        `SELECT status, attempts FROM inbox_messages WHERE consumer = ${placeholder(kind, 0)} AND message_id = ${placeholder(kind, 1)}`,
        ['rmq-effects', id],
      )
    )[0];
  /** Prefetch 1: once a sentinel published after them is done, every earlier message on the queue is settled. */
  const drain = async (queue: string) => {
    const note = `sentinel-${randomUUID()}`;
    await publish(queue, randomUUID(), { note });
    await waitFor(async () => (await effects(note)) === 1, `the sentinel on ${queue}`);
  };

  it('runs the handler once when two consumer processes get the same message at the same moment', async () => {
    const [qa, qb] = [await newQueue(), await newQueue()];
    const a = await spawnConsumer(qa);
    const b = await spawnConsumer(qb);
    const id = randomUUID();
    const note = `two-procs-${id}`;
    // The same message on both queues at once; each handler holds its transaction open for 1.5 s.
    await Promise.all([
      publish(qa, id, { note, delayMs: 1500 }),
      publish(qb, id, { note, delayMs: 1500 }),
    ]);
    await Promise.all([drain(qa), drain(qb)]);

    const delivered = new RegExp(`^DELIVERED ${id}$`);
    const running = new RegExp(`^RUNNING ${id}$`);
    expect(lines(a.output(), delivered)).toBe(1);
    expect(lines(b.output(), delivered)).toBe(1);
    expect(lines(a.output(), running) + lines(b.output(), running)).toBe(1);
    expect(await effects(note)).toBe(1);
    expect(await inboxRow(id)).toMatchObject({ status: 'processed' });
    expect(Number((await inboxRow(id)).attempts)).toBe(1);
    // The duplicate waited for the first commit and was skipped, not failed.
    expect(a.output() + b.output()).not.toMatch(/error/i);
  }, 180_000);

  it('recovers a consumer killed mid-handler: RabbitMQ redelivers to another process, one effect', async () => {
    const q = await newQueue();
    const victim = await spawnConsumer(q, { INBOX_FIXTURE_DELAY_MS: '600000' });
    const id = randomUUID();
    const note = `killed-${id}`;
    await publish(q, id, { note });
    // The handler has written its effect and holds the transaction open: kill the process.
    await victim.waitFor(new RegExp(`^RUNNING ${id}$`, 'm'));
    await victim.stop('SIGKILL');
    expect(await effects(note)).toBe(0);

    const survivor = await spawnConsumer(q);
    await waitFor(async () => (await effects(note)) === 1, 'the redelivered message');
    await drain(q);
    expect(survivor.output()).toMatch(new RegExp(`^RUNNING ${id}$`, 'm'));
    expect(await effects(note)).toBe(1);
    expect(await inboxRow(id)).toMatchObject({ status: 'processed' });
    // The killed attempt's record rolled back with its effect: this is the first committed run.
    expect(Number((await inboxRow(id)).attempts)).toBe(1);
  }, 180_000);
});
