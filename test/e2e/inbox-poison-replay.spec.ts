import * as amqp from 'amqplib';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, sleep } from '../support/eventually';
import { spawnSampleApp, type AppProcess } from '../support/sample-app';

jest.setTimeout(180_000);

const RABBIT_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/**
 * Inbox retries on RabbitMQ with the sample app as real processes (SQLite file, one durable
 * queue per test): a failed delivery is held unacknowledged for the backoff delay instead of
 * being requeued at once, a process killed while holding it loses nothing, and the operator's
 * poison → fix → replay flow (admin API) runs the fixed handler exactly once.
 */
describe('inbox retries and replay on RabbitMQ (sample app processes)', () => {
  let dir: string;
  let conn: amqp.ChannelModel;
  let ch: amqp.Channel;
  const apps: AppProcess[] = [];
  const queues: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'eo-inbox-replay-'));
    conn = await amqp.connect(RABBIT_URL);
    ch = await conn.createChannel();
  });

  afterAll(async () => {
    for (const a of apps) await a.kill('SIGKILL');
    for (const q of queues) await ch.deleteQueue(q).catch(() => undefined);
    await conn?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function start(db: string, queue: string, env: Record<string, string>) {
    const app = await spawnSampleApp({
      DB_URL: `sqlite:${join(dir, db)}`,
      BROKER_URL: RABBIT_URL,
      BROKER_QUEUE: queue,
      OUTBOX_POLL_INTERVAL_MS: '100',
      OUTBOX_BACKOFF_BASE_MS: '50',
      OUTBOX_BACKOFF_MAX_MS: '200',
      ...env,
    });
    apps.push(app);
    return app;
  }

  const json = async (app: AppProcess, path: string, init?: RequestInit) => {
    const r = await fetch(`${app.url}${path}`, init);
    return { status: r.status, body: r.status === 204 ? undefined : ((await r.json()) as any) };
  };

  async function pay(app: AppProcess): Promise<string> {
    const r = await json(app, '/payments', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ amount: 7.25, currency: 'EUR', customerId: 'c-replay' }),
    });
    expect(r.status).toBe(201);
    return r.body.id as string;
  }

  /** The outbox message (the inbox's message id) of a payment's `payment.captured` event. */
  async function eventOf(app: AppProcess, paymentId: string): Promise<string> {
    return eventually('the payment event in the outbox', async () => {
      const all = (await json(app, '/admin/outbox?order=newest&limit=1000')).body as any[];
      for (const m of all) {
        const full = (await json(app, `/admin/outbox/${m.id}`)).body;
        if (full.type === 'payment.captured' && JSON.stringify(full.payload).includes(paymentId)) {
          return m.id as string;
        }
      }
      return undefined;
    });
  }

  const ledgerRecord = async (app: AppProcess, messageId: string) => {
    const rows = (await json(app, '/admin/inbox?consumer=ledger&limit=1000')).body as any[];
    return rows.find((r) => r.messageId === messageId);
  };
  /** The ledger consumer's inbox_duplicates counter of a process. */
  const duplicatesSeen = async (app: AppProcess): Promise<number> => {
    const text = await (await fetch(`${app.url}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('inbox_duplicates') && l.includes('consumer="ledger"'));
    return line ? Number(line.trim().split(/\s+/).pop()) : 0;
  };
  const ledgerOf = async (app: AppProcess, paymentId: string) =>
    (await json(app, `/ledger?paymentId=${paymentId}`)).body as any[];

  it('holds a failed delivery for the backoff delay; a process killed while holding it loses nothing', async () => {
    const queue = `inbox-held-${randomUUID()}`;
    queues.push(queue);
    // Every run fails, and the next attempt is 10 minutes away: the delivery stays held.
    const a = await start('held.sqlite', queue, {
      LEDGER_DEMO_FAIL_ATTEMPTS: '1000',
      INBOX_BACKOFF_BASE_MS: '600000',
      INBOX_BACKOFF_MAX_MS: '600000',
    });
    const paymentId = await pay(a);
    const id = await eventOf(a, paymentId);
    await eventually('the first failed attempt', async () => {
      const r = await ledgerRecord(a, id);
      return r?.status === 'retrying' && r.attempts === 1;
    });
    // Before: the requeue came back at once, 5 attempts within a second. Now it waits.
    await sleep(1500);
    expect(await ledgerRecord(a, id)).toMatchObject({ status: 'retrying', attempts: 1 });
    expect((await ch.checkQueue(queue)).messageCount).toBe(0); // held, unacknowledged

    await a.kill('SIGKILL');
    // The broker takes the unacknowledged delivery back when the connection dies.
    await eventually('the held message back in the queue', async () => {
      const q = await ch.checkQueue(queue);
      return q.consumerCount === 0 && q.messageCount === 1;
    });

    // A healthy process on the same database and queue books it once.
    const b = await start('held.sqlite', queue, {});
    await eventually('the ledger entry', async () => (await ledgerOf(b, paymentId)).length === 1);
    expect(await ledgerRecord(b, id)).toMatchObject({ status: 'processed', attempts: 2 });
    await b.kill();
  });

  it('poison → fix → replay: failed after maxAttempts, reset and requeued through the admin API, the fixed handler books it once', async () => {
    const queue = `inbox-replay-${randomUUID()}`;
    queues.push(queue);
    // The handler is broken for every message (poison), with short retry delays.
    const broken = await start('replay.sqlite', queue, {
      LEDGER_DEMO_FAIL_ATTEMPTS: '1000',
      INBOX_MAX_ATTEMPTS: '3',
      INBOX_BACKOFF_BASE_MS: '50',
      INBOX_BACKOFF_MAX_MS: '200',
    });
    const paymentId = await pay(broken);
    const id = await eventOf(broken, paymentId);
    const failed = await eventually('the message recorded failed', async () => {
      const r = await ledgerRecord(broken, id);
      return r?.status === 'failed' ? r : undefined;
    });
    expect(failed).toMatchObject({ attempts: 3 });
    expect(failed.lastError).toContain('Demo failure');
    expect((await json(broken, `/admin/outbox/${id}`)).body.status).toBe('sent');
    expect(await ledgerOf(broken, paymentId)).toEqual([]);
    // Recorded failed means acknowledged: nothing left in the queue.
    await eventually(
      'the queue drained',
      async () => (await ch.checkQueue(queue)).messageCount === 0,
    );

    // The fix is deployed: the process is replaced by one whose handler works.
    await broken.kill();
    const fixed = await start('replay.sqlite', queue, { LOG_LEVEL: 'log' });

    // Bad input is refused; a record that is not there is 404.
    expect(
      (await json(fixed, `/admin/inbox/ledger/${'x'.repeat(256)}/reset`, { method: 'POST' }))
        .status,
    ).toBe(400);
    const missing = await json(fixed, `/admin/inbox/ledger/${randomUUID()}/reset`, {
      method: 'POST',
    });
    expect(missing.status).toBe(404);
    expect(missing.body.type).toContain('admin-not-found');

    // The operator resets the inbox record, then requeues the outbox message.
    const reset = await json(fixed, `/admin/inbox/ledger/${id}/reset`, { method: 'POST' });
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({
      reset: true,
      record: { messageId: id, status: 'failed', attempts: 3 },
    });
    expect(await ledgerRecord(fixed, id)).toBeUndefined();
    const requeued = await json(fixed, `/admin/outbox/${id}/requeue`, { method: 'POST' });
    expect(requeued.status).toBe(200);

    await eventually(
      'the replayed ledger entry',
      async () => (await ledgerOf(fixed, paymentId)).length === 1,
    );
    expect(await ledgerRecord(fixed, id)).toMatchObject({ status: 'processed', attempts: 1 });

    // A processed record cannot be reset (its handler would run twice): 409.
    const refused = await json(fixed, `/admin/inbox/ledger/${id}/reset`, { method: 'POST' });
    expect(refused.status).toBe(409);
    expect(refused.body.type).toContain('admin-conflict');

    // Delivered once more (another requeue): skipped as a duplicate, still one entry.
    const before = await duplicatesSeen(fixed);
    expect((await json(fixed, `/admin/outbox/${id}/requeue`, { method: 'POST' })).status).toBe(200);
    await eventually('the redelivery skipped', async () => (await duplicatesSeen(fixed)) > before);
    expect(await ledgerOf(fixed, paymentId)).toHaveLength(1);
    expect(await ledgerRecord(fixed, id)).toMatchObject({ status: 'processed', attempts: 1 });
    expect(fixed.output()).toContain('admin.inbox.reset');
    await fixed.kill();
  });
});
