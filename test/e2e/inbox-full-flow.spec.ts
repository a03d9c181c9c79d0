import * as amqp from 'amqplib';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';

const RABBIT_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const PAYMENTS = 10;

async function eventually(
  probe: () => Promise<boolean>,
  what: string,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const exited = (p: AppProcess) =>
  new Promise<void>((resolve) =>
    p.child.exitCode !== null || p.child.signalCode !== null
      ? resolve()
      : p.child.once('exit', () => resolve()),
  );

/** `inbox_duplicates` of the ledger consumer in one process's /metrics. */
async function duplicatesIn(p: AppProcess): Promise<number> {
  const text = await (await fetch(`${p.url}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('inbox_duplicates') && l.includes('consumer="ledger"'));
  return line ? Number(line.trim().split(/\s+/).pop()) : 0;
}

/**
 * HTTP → outbox → relay → RabbitMQ → inbox → ledger, with a retry at every hop, on real
 * processes (dist/sample-app, `npm run build` first):
 * - HTTP: every payment's first POST fails (503, rolled back), then the client retries twice at
 *   once and once more (the gate runs it once and replays);
 * - relay: process A's relay publishes a batch to RabbitMQ and is killed (SIGKILL, fault point
 *   `relay-after-publish`) before marking it sent; after its lease, process C's relay publishes
 *   the batch again, so RabbitMQ carries duplicates;
 * - inbox: the ledger consumers of B and C fail the first run of every message
 *   (LEDGER_DEMO_FAIL_ATTEMPTS=1): rolled back, rejected, redelivered by RabbitMQ.
 * Exactly one ledger entry per payment at the end.
 */
describe.each(databaseKinds())('full flow with retries at every hop on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource | undefined;
  const processes: AppProcess[] = [];
  const queue = `ledger-flow-${randomUUID()}`;
  let conn: amqp.ChannelModel;
  let ch: amqp.Channel;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    conn = await amqp.connect(RABBIT_URL);
    ch = await conn.createChannel();
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGKILL')));
    await ch?.deleteQueue(queue).catch(() => undefined);
    await conn?.close();
    await ds?.destroy();
    await db?.drop();
  });

  const start = async (env: Record<string, string>) => {
    const p = await spawnSampleApp({
      DB_URL: db.url,
      BROKER_URL: RABBIT_URL,
      BROKER_QUEUE: queue,
      OUTBOX_POLL_INTERVAL_MS: '200',
      OUTBOX_LEASE_MS: '3000',
      OUTBOX_PUBLISH_TIMEOUT_MS: '2000',
      LOG_LEVEL: 'error',
      ...env,
    });
    processes.push(p);
    return p;
  };

  it('writes exactly one ledger entry per payment', async () => {
    // A: relay on, killed right after its first published batch. B: HTTP, consumer, no relay.
    const a = await start({ EO_TEST_FAULTS: 'relay-after-publish' });
    const b = await start({ OUTBOX_RELAY_ENABLED: 'false', LEDGER_DEMO_FAIL_ATTEMPTS: '1' });
    ds = await openDataSource(db.url);

    const post = (key: string, customerId: string, fail = false) =>
      fetch(`${b.url}/payments`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          ...(fail ? { 'x-demo-fail': '503' } : {}),
        },
        body: JSON.stringify({ amount: 10, currency: 'EUR', customerId }),
      });
    const customerId = `flow-${randomUUID().slice(0, 8)}`;
    const paymentIds: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const key = randomUUID();
      expect((await post(key, customerId, true)).status).toBe(503);
      const [r1, r2] = await Promise.all([post(key, customerId), post(key, customerId)]);
      const r3 = await post(key, customerId);
      expect(r3.status).toBe(201);
      expect(r3.headers.get('idempotency-replayed')).toBe('true');
      expect([r1.status, r2.status]).toContain(201);
      paymentIds.push(((await r3.json()) as { id: string }).id);
    }

    // The relay hop: A published a batch and died before marking it; C takes over after the lease.
    await exited(a);
    expect(a.child.signalCode).toBe('SIGKILL');
    expect(a.output()).toContain('fault point relay-after-publish reached');
    const c = await start({ LEDGER_DEMO_FAIL_ATTEMPTS: '1' });

    const pendingOutbox = async () =>
      Number(
        (await ds!.query(`SELECT COUNT(*) AS n FROM outbox_messages WHERE status <> 'sent'`))[0].n,
      );
    const ledgerCounts = async () => {
      const rows: Array<{ payment_id: string }> = await ds!.query(
        `SELECT payment_id FROM ledger_entries`,
      );
      const counts = new Map<string, number>();
      for (const r of rows) counts.set(r.payment_id, (counts.get(r.payment_id) ?? 0) + 1);
      return counts;
    };
    await eventually(async () => {
      const counts = await ledgerCounts();
      const { messageCount } = await ch.checkQueue(queue);
      return (
        paymentIds.every((id) => counts.has(id)) &&
        (await pendingOutbox()) === 0 &&
        messageCount === 0
      );
    }, 'every payment in the ledger, the outbox sent and the queue drained');
    // The republished batch reached the consumers and the inbox skipped it.
    await eventually(
      async () => (await duplicatesIn(b)) + (await duplicatesIn(c)) > 0,
      'duplicates skipped by the inbox',
    );

    for (const id of paymentIds) {
      const r = await fetch(`${c.url}/ledger?paymentId=${id}`);
      const entries = (await r.json()) as unknown[];
      expect(entries).toHaveLength(1);
    }
    const counts = await ledgerCounts();
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(counts.size).toBe(PAYMENTS);

    // The inbox hop: first runs failed and were redelivered; every message ended processed.
    const inbox: Array<{ status: string; attempts: number }> = await ds.query(
      `SELECT status, attempts FROM inbox_messages WHERE consumer = 'ledger'`,
    );
    expect(inbox).toHaveLength(PAYMENTS);
    expect(inbox.every((r) => r.status === 'processed')).toBe(true);
    expect(inbox.filter((r) => Number(r.attempts) >= 2).length).toBeGreaterThan(0);
  }, 300_000);
});
