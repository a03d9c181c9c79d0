import * as amqp from 'amqplib';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import type { DataSource } from 'typeorm';
import { RABBIT_URL } from '../fixtures/outbox/rabbit-collector';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { eventually } from '../support/eventually';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';

const PAYMENTS = 20;

/** A free TCP port on the loopback. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A NATS server of this test's own: subjects (`payment.captured`) are global on a NATS server, so
 * on the shared one the ledger's queue group also receives other suites' events, and their
 * redeliveries show up here as duplicates.
 */
async function privateNats(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const bin = existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server';
  const child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `nats://127.0.0.1:${port}`;
  await eventually(
    'the private NATS server listens',
    () =>
      new Promise<boolean>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        socket.once('connect', () => (socket.destroy(), resolve(true)));
        socket.once('error', () => resolve(false));
      }),
    10_000,
    100,
  );
  return { url, child };
}

/** A counter of one consumer in one process's /metrics (`inbox_processed{consumer="ledger"}`). */
async function counter(p: AppProcess, name: string, consumer: string): Promise<number> {
  const text = await (await fetch(`${p.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(name) && l.includes(`consumer="${consumer}"`))
    .reduce((sum, l) => sum + Number(l.trim().split(/\s+/).pop()), 0);
}

type Transport = 'rabbitmq' | 'nats';
// RabbitMQ on every database; NATS (the same consumer path, another broker) on SQLite and
// PostgreSQL, or on the one database of a single-database run (the SQL Server phase).
const natsKinds = databaseKinds().filter((k) => k === 'sqlite' || k === 'postgres');
const cases: Array<readonly [string, Transport]> = [
  ...databaseKinds().map((db) => [db, 'rabbitmq'] as const),
  ...(natsKinds.length ? natsKinds : databaseKinds().slice(0, 1)).map(
    (db) => [db, 'nats'] as const,
  ),
];

/**
 * Fan-out to a second consuming service (dist/sample-app, `npm run build` first): two instances
 * of the ledger service (CONSUMERS=ledger) and one of the notifications service
 * (CONSUMERS=notifications), real processes on one database. Every payment gets one ledger entry
 * and one notification: the notifications service gets its own copy of every event (its own
 * RabbitMQ queue bound to the fanout exchange, its own NATS queue group), while the two ledger
 * instances compete for the ledger's copy (each event delivered to one of them: no duplicate
 * reaches the ledger's inbox, and both did part of the work).
 */
describe.each(cases)('fan-out to a second service on %s over %s', (kind, transport) => {
  let db: TestDatabase;
  let ds: DataSource | undefined;
  const processes: AppProcess[] = [];
  const queue = `eo-fanout-${randomUUID()}`;
  let nats: { url: string; child: ChildProcess } | undefined;

  beforeAll(async () => {
    db = await createTestDatabase(kind as TestDatabase['kind']);
    if (transport === 'nats') nats = await privateNats();
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGKILL')));
    nats?.child.kill('SIGKILL');
    if (transport === 'rabbitmq') {
      const conn = await amqp.connect(RABBIT_URL);
      const ch = await conn.createChannel();
      for (const q of [queue, `${queue}.notifications`]) await ch.deleteQueue(q);
      await ch.deleteExchange(`${queue}.events`);
      await conn.close();
    }
    await ds?.destroy();
    await db?.drop();
  });

  const start = async (consumers: string) => {
    const p = await spawnSampleApp({
      DB_URL: db.url,
      BROKER_URL: transport === 'rabbitmq' ? RABBIT_URL : nats!.url,
      BROKER_QUEUE: queue,
      CONSUMERS: consumers,
      OUTBOX_POLL_INTERVAL_MS: '200',
      LOG_LEVEL: 'error',
    });
    processes.push(p);
    return p;
  };

  it('every payment: one ledger entry and one notification; the ledger instances share the work', async () => {
    // One at a time: the first process runs the migrations.
    const ledgerA = await start('ledger');
    const ledgerB = await start('ledger');
    const notifications = await start('notifications');
    ds = await openDataSource(db.url);

    const paymentIds: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const r = await fetch(`${processes[i % 3].url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify({ amount: 10 + i, currency: 'EUR', customerId: `fan-${i}` }),
      });
      expect(r.status).toBe(201);
      paymentIds.push(((await r.json()) as { id: string }).id);
    }

    // Only this test's payments: the NATS subject is shared with any other sample app running
    // on the same server, whose events this test's consumers also receive (and record).
    const ours = new Set(paymentIds);
    const countsOf = async (table: string) => {
      const rows: Array<{ payment_id: string }> = await ds!.query(
        `SELECT payment_id FROM ${table}`,
      );
      const counts = new Map<string, number>();
      for (const r of rows) {
        if (ours.has(r.payment_id)) counts.set(r.payment_id, (counts.get(r.payment_id) ?? 0) + 1);
      }
      return counts;
    };
    await eventually(
      'every payment in the ledger and notified',
      async () => {
        const [ledger, notified] = [
          await countsOf('ledger_entries'),
          await countsOf('notifications'),
        ];
        return paymentIds.every((id) => ledger.has(id) && notified.has(id)) || undefined;
      },
      60_000,
      200,
    );

    for (const id of paymentIds) {
      const ledger = (await (
        await fetch(`${ledgerA.url}/ledger?paymentId=${id}`)
      ).json()) as unknown[];
      const notes = (await (
        await fetch(`${ledgerB.url}/notifications?paymentId=${id}`)
      ).json()) as Array<{ text: string }>;
      expect([ledger.length, notes.length]).toEqual([1, 1]);
      expect(notes[0].text).toMatch(/^Payment of \d+\.00 EUR captured$/);
    }
    const [ledger, notified] = [await countsOf('ledger_entries'), await countsOf('notifications')];
    expect([ledger.size, notified.size]).toEqual([PAYMENTS, PAYMENTS]);
    expect([...ledger.values(), ...notified.values()].every((n) => n === 1)).toBe(true);

    // Each service's inbox recorded every message once, under its own consumer name.
    const sent = new Set(
      ((await ds.query(`SELECT id FROM outbox_messages`)) as Array<{ id: string }>).map(
        (r) => r.id,
      ),
    );
    expect(sent.size).toBe(PAYMENTS);
    const inbox: Array<{ consumer: string; message_id: string; status: string }> = await ds.query(
      `SELECT consumer, message_id, status FROM inbox_messages`,
    );
    const recorded = (consumer: string) =>
      inbox.filter((r) => r.consumer === consumer && sent.has(r.message_id)).map((r) => r.status);
    expect(recorded('ledger')).toEqual(Array(PAYMENTS).fill('processed'));
    expect(recorded('notifications')).toEqual(Array(PAYMENTS).fill('processed'));

    // Competing instances: each ledger event reached one ledger instance (no copy went to both,
    // which the inbox would have counted as a duplicate) and both took part.
    const processedA = await counter(ledgerA, 'inbox_processed', 'ledger');
    const processedB = await counter(ledgerB, 'inbox_processed', 'ledger');
    expect(processedA + processedB).toBeGreaterThanOrEqual(PAYMENTS);
    expect(processedA).toBeGreaterThan(0);
    expect(processedB).toBeGreaterThan(0);
    expect(
      (await counter(ledgerA, 'inbox_duplicates', 'ledger')) +
        (await counter(ledgerB, 'inbox_duplicates', 'ledger')),
    ).toBe(0);
    // The notifications process ran no ledger consumer, the ledger processes no notifications one.
    expect(await counter(notifications, 'inbox_processed', 'notifications')).toBeGreaterThanOrEqual(
      PAYMENTS,
    );
    expect(await counter(notifications, 'inbox_processed', 'ledger')).toBe(0);
    expect(await counter(ledgerA, 'inbox_processed', 'notifications')).toBe(0);
  }, 240_000);
});
