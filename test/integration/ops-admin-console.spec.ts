import {
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  Injectable,
  type LoggerService,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { FunctionPublisher, type OutboxMessage } from '../../lib';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { eventually } from '../support/eventually';
import { clockFor, dataSourceOf, sqlFor, startOpsApp, urlOf } from '../support/ops-fixture';

/** Lets every request through as the operator named in `x-test-operator` (a stand-in authentication guard). */
@Injectable()
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest();
    const name = req.headers['x-test-operator'];
    if (name) req.user = { id: 7, username: String(name) };
    return true;
  }
}

/** Keeps the library's structured events. */
class CapturingLogger implements LoggerService {
  readonly events: any[] = [];
  log(message: unknown) {
    if (message && typeof message === 'object') this.events.push(message);
  }
  warn() {}
  error() {}
}

/**
 * The admin API's reads behind the console (overview, inbox list, newest-first outbox list, a
 * key's times) and its protection of actions against cross-site requests, on every database.
 */
describe.each(databaseKinds())('admin API for the console on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let sql: (text: string, params?: unknown[]) => Promise<any>;
  let at: (ms: number) => string;
  const logger = new CapturingLogger();
  const published: OutboxMessage[] = [];
  let failing = false;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await startOpsApp(
      db.url,
      {
        logger,
        cleanup: { enabled: false },
        outbox: {
          publisher: new FunctionPublisher((m) => {
            if (failing) throw new Error('broker says no');
            published.push(m);
          }),
          maxAttempts: 1,
          pollIntervalMs: 50,
        },
      },
      { admin: { guards: [OperatorGuard] } },
    );
    url = await urlOf(app);
    sql = sqlFor(kind, dataSourceOf(app));
    at = clockFor(kind);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const r = await fetch(`${url}${path}`, { headers });
    return {
      status: r.status,
      type: r.headers.get('content-type') ?? '',
      body: (await r.json()) as any,
    };
  };
  const post = (key: string, body: object) =>
    fetch(`${url}/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
  const insertInbox = (
    consumer: string,
    id: string,
    status: string,
    receivedMs: number,
    error: string | null,
  ) =>
    sql(
      `INSERT INTO inbox_messages (consumer, message_id, status, attempts, received_at, processed_at, last_error)
       VALUES (?, ?, ?, ?, ${at(receivedMs)}, ${status === 'retrying' ? 'NULL' : at(receivedMs)}, ?)`,
      [consumer, id, status, status === 'processed' ? 1 : 3, error],
    );

  it('overview: outbox counts by status, the oldest pending age and messages sent in the last minutes', async () => {
    failing = false;
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const r = await post(randomUUID(), { name: `ok-${n}` });
      ids.push(((await r.json()) as { messageId: string }).messageId);
    }
    await eventually('three sent', () => ids.every((id) => published.some((m) => m.id === id)));
    // A pending message that is not due for an hour, written 90 s ago: the oldest pending.
    await sql(
      `INSERT INTO outbox_messages (id, type, payload, status, attempts, next_attempt_at, created_at) VALUES (?, 'thing.created', '{}', 'pending', 0, ${at(3_600_000)}, ${at(-90_000)})`,
      [`later-${randomUUID()}`],
    );
    // Sent 5 minutes ago (and a bit): counted in the minute 5 of the series.
    await sql(
      `INSERT INTO outbox_messages (id, type, payload, status, attempts, next_attempt_at, created_at, sent_at) VALUES (?, 'thing.created', '{}', 'sent', 0, ${at(-320_000)}, ${at(-320_000)}, ${at(-320_000)})`,
      [`old-${randomUUID()}`],
    );
    const counted = await eventually('the sent ones to be marked sent', async () => {
      const o = (await get('/admin/overview')).body;
      return o.outbox.counts.sent >= 4 ? o : undefined;
    });
    const listed = (await get('/admin/outbox?limit=1000')).body as any[];
    const byStatus = (s: string) => listed.filter((m) => m.status === s).length;
    expect(counted.outbox.counts).toEqual({
      pending: byStatus('pending'),
      sent: byStatus('sent'),
      dead: byStatus('dead'),
    });
    expect(counted.outbox.counts.pending).toBe(1);
    expect(counted.outbox.oldestPendingAgeMs).toBeGreaterThanOrEqual(89_000);
    expect(counted.outbox.oldestPendingAgeMs).toBeLessThan(600_000);
    expect(counted.outbox.sentPerMinute).toHaveLength(15);
    expect(counted.outbox.sentPerMinute[0] + counted.outbox.sentPerMinute[1]).toBe(3);
    expect(counted.outbox.sentPerMinute[5]).toBe(1);
    expect(counted.outbox.sentPerMinute.reduce((a: number, b: number) => a + b, 0)).toBe(4);

    const newest = (await get('/admin/outbox?order=newest&limit=2')).body as any[];
    expect(newest.map((m) => m.seq)).toEqual(
      listed
        .map((m) => m.seq)
        .slice(-2)
        .reverse(),
    );
    expect((await get('/admin/outbox?order=sideways')).status).toBe(400);
  });

  it('inbox: records per consumer and status, listed newest first and filtered', async () => {
    await insertInbox('billing', 'b-old', 'processed', -60_000, null);
    await insertInbox('billing', 'b-new', 'processed', -1_000, null);
    await insertInbox('billing', 'b-fail', 'failed', -5_000, 'card declined');
    await insertInbox('shipping', 's-retry', 'retrying', -2_000, 'timeout');
    await insertInbox('shipping', 's-done', 'processed', -3_000, null);

    const overview = (await get('/admin/overview')).body;
    expect(overview.inbox.consumers).toEqual(
      expect.arrayContaining([
        { consumer: 'billing', processed: 2, retrying: 0, failed: 1 },
        { consumer: 'shipping', processed: 1, retrying: 1, failed: 0 },
      ]),
    );
    const billing = (await get('/admin/inbox?consumer=billing')).body as any[];
    expect(billing.map((r) => r.messageId)).toEqual(['b-new', 'b-fail', 'b-old']);
    const failed = (await get('/admin/inbox?status=failed')).body as any[];
    expect(failed).toEqual([
      expect.objectContaining({
        consumer: 'billing',
        messageId: 'b-fail',
        status: 'failed',
        attempts: 3,
        lastError: 'card declined',
      }),
    ]);
    const retrying = (await get('/admin/inbox?status=retrying&consumer=shipping')).body as any[];
    expect(retrying.map((r) => [r.messageId, r.processedAt])).toEqual([['s-retry', null]]);
    expect(
      (await get('/admin/inbox?status=processed&limit=1')).body.map((r: any) => r.messageId),
    ).toEqual(['b-new']);
    const bad = await get('/admin/inbox?status=done');
    expect(bad.status).toBe(400);
    expect(bad.type).toContain('application/problem+json');
    expect(bad.body.detail).toContain('processed, retrying, failed');
    expect((await get(`/admin/inbox?consumer=${'x'.repeat(201)}`)).status).toBe(400);
  });

  it('inbox reset: a failed or retrying record is deleted (one, or every failed one of a consumer), a processed one is refused', async () => {
    const c = `reset-${randomUUID().slice(0, 8)}`;
    await insertInbox(c, 'r-fail', 'failed', -4_000, 'boom');
    await insertInbox(c, 'r-retry', 'retrying', -3_000, 'boom');
    await insertInbox(c, 'r-done', 'processed', -2_000, null);
    await insertInbox(c, 'r-fail-2', 'failed', -1_000, 'boom');
    await insertInbox(`${c}-other`, 'r-fail', 'failed', -1_000, 'boom');
    const post = (path: string) =>
      fetch(`${url}/admin${path}`, { method: 'POST', headers: { 'x-test-operator': 'bob' } });
    const ids = async (consumer: string) =>
      ((await get(`/admin/inbox?consumer=${consumer}`)).body as any[]).map((r) => r.messageId);

    const one = await post(`/inbox/${c}/r-fail/reset`);
    expect(one.status).toBe(200);
    expect(await one.json()).toMatchObject({
      reset: true,
      record: {
        consumer: c,
        messageId: 'r-fail',
        status: 'failed',
        attempts: 3,
        lastError: 'boom',
      },
    });
    expect((await post(`/inbox/${c}/r-retry/reset`)).status).toBe(200);
    const processed = await post(`/inbox/${c}/r-done/reset`);
    expect(processed.status).toBe(409);
    expect(processed.headers.get('content-type')).toContain('application/problem+json');
    expect(((await processed.json()) as any).detail).toContain('is processed');
    const gone = await post(`/inbox/${c}/r-fail/reset`);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as any).type).toBe(
      'urn:nestjs-exactly-once:problem:admin-not-found',
    );
    expect((await post(`/inbox/${'x'.repeat(201)}/r-fail/reset`)).status).toBe(400);
    expect(await ids(c)).toEqual(['r-fail-2', 'r-done']);
    expect(logger.events).toContainEqual(
      expect.objectContaining({
        event: 'admin.inbox.reset',
        consumer: c,
        messageId: 'r-fail',
        principal: '7',
      }),
    );

    // Every failed record of one consumer; the other consumer's failed record stays.
    const bulk = await post(`/inbox/reset-failed?consumer=${c}`);
    expect(bulk.status).toBe(200);
    expect(await bulk.json()).toEqual({ reset: 1 });
    expect(await ids(c)).toEqual(['r-done']);
    expect(await ids(`${c}-other`)).toEqual(['r-fail']);
  });

  it("a key's record shows when it was created, completed and expires", async () => {
    const key = randomUUID();
    expect((await post(key, { name: 'timed' })).status).toBe(201);
    const q = `method=POST&route=${encodeURIComponent('/things')}&key=${encodeURIComponent(key)}`;
    const { status, body } = await get(`/admin/idempotency?${q}`);
    expect(status).toBe(200);
    const created = Date.parse(body.createdAt);
    const completed = Date.parse(body.completedAt);
    const expires = Date.parse(body.expiresAt);
    expect(Math.abs(created - Date.now())).toBeLessThan(60_000);
    expect(completed).toBeGreaterThanOrEqual(created);
    // The default retention of a completed record is 24 hours.
    expect(expires - completed).toBeGreaterThan(23 * 3_600_000);
  });

  it('refuses an action from another site (403 problem+json, nothing changed) and logs actions with the principal', async () => {
    failing = true;
    const r = await post(randomUUID(), { name: 'doomed', partitionKey: `pk-${randomUUID()}` });
    const id = ((await r.json()) as { messageId: string }).messageId;
    await eventually('dead', async () => (await get(`/admin/outbox/${id}`)).body.status === 'dead');
    failing = false;

    const action = (headers: Record<string, string>) =>
      fetch(`${url}/admin/outbox/${id}/requeue`, { method: 'POST', headers });
    const crossSite: Array<Record<string, string>> = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      { 'sec-fetch-site': 'same-site' },
      // A form on another site that names this host in a header it controls does not pass.
      { origin: `http://localhost:1`, 'content-type': 'application/x-www-form-urlencoded' },
    ];
    for (const headers of crossSite) {
      const refused = await action(headers);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(((await refused.json()) as any).type).toBe(
        'urn:nestjs-exactly-once:problem:admin-cross-site-request',
      );
    }
    expect((await get(`/admin/outbox/${id}`)).body.status).toBe('dead');
    expect(logger.events.filter((e) => e.event === 'admin.outbox.requeued')).toEqual([]);

    const sameOrigin = await action({
      origin: url,
      'sec-fetch-site': 'same-origin',
      'x-test-operator': 'alice',
    });
    expect(sameOrigin.status).toBe(200);
    expect(logger.events).toContainEqual(
      expect.objectContaining({ event: 'admin.outbox.requeued', messageId: id, principal: '7' }),
    );
    await eventually('re-published', () => published.some((m) => m.id === id));

    // No Origin and no Sec-Fetch-Site (curl, a script): not a browser, not refused; no principal.
    const key = randomUUID();
    await post(key, { name: 'evict-me' });
    const evicted = await fetch(
      `${url}/admin/idempotency?method=POST&route=${encodeURIComponent('/things')}&key=${key}`,
      { method: 'DELETE' },
    );
    expect(evicted.status).toBe(204);
    expect(logger.events).toContainEqual(
      expect.objectContaining({
        event: 'admin.idempotency.evicted',
        scope: '-|-|POST /things',
        principal: null,
      }),
    );
    // Reads are not actions: a cross-site GET is answered (the browser keeps the answer from the other site).
    expect((await get('/admin/overview', { origin: 'https://evil.example' })).status).toBe(200);
  });
});
