import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { FunctionPublisher, IdempotencyAdminService, type OutboxMessage } from '../../lib';
import { startAppOnDatabase, stopAppOnDatabase } from '../support/app-on-database';
import { databaseKinds, type TestDatabase } from '../support/databases';
import { eventually } from '../support/eventually';
import { clockFor, dataSourceOf, postThing, sqlFor, startOpsApp } from '../support/ops-fixture';

describe.each(databaseKinds())('admin API on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  const published: OutboxMessage[] = [];
  let failing = true;

  beforeAll(async () => {
    const publisher = new FunctionPublisher((m) => {
      if (failing && String((m.payload as { name?: string }).name).startsWith('doomed')) {
        throw new Error('broker says no');
      }
      published.push(m);
    });
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startOpsApp(dbUrl, {
        cleanup: { enabled: false },
        outbox: {
          publisher,
          maxAttempts: 1,
          pollIntervalMs: 50,
          backoffBaseMs: 10,
          backoffMaxMs: 100,
        },
      }),
    ));
  });

  afterAll(() => stopAppOnDatabase({ app, db }));

  const post = (key: string, body: object) => postThing(url, key, body);
  const json = async (path: string, init?: RequestInit) => {
    const r = await fetch(`${url}${path}`, init);
    return {
      status: r.status,
      type: r.headers.get('content-type') ?? '',
      body: r.status === 204 ? undefined : ((await r.json()) as any),
    };
  };
  const list = async (query: string) => (await json(`/admin/outbox?${query}`)).body as any[];

  it('re-queues a dead message, which the relay then publishes', async () => {
    failing = true;
    const pk = `pk-${randomUUID()}`;
    const created = await post(randomUUID(), { name: 'doomed-1', partitionKey: pk });
    expect(created.status).toBe(201);
    const { messageId } = (await created.json()) as { messageId: string };

    const [dead] = await eventually('the message to become dead', async () => {
      const rows = await list(`status=dead&partitionKey=${encodeURIComponent(pk)}`);
      return rows.length ? rows : undefined;
    });
    expect(dead).toMatchObject({
      id: messageId,
      type: 'thing.created',
      status: 'dead',
      partitionKey: pk,
      attempts: 1,
    });
    expect(dead.lastError).toContain('broker says no');
    expect(published.some((m) => m.id === messageId)).toBe(false);

    failing = false;
    const requeued = await json(`/admin/outbox/${encodeURIComponent(messageId)}/requeue`, {
      method: 'POST',
    });
    expect(requeued.status).toBe(200);
    expect(requeued.body).toMatchObject({ id: messageId });
    expect(['pending', 'sent']).toContain(requeued.body.status);
    // Attempts start again from 0; a sent message counts the attempt that succeeded.
    expect(requeued.body.attempts).toBe(requeued.body.status === 'sent' ? 1 : 0);

    await eventually('the re-queued message to be published', async () =>
      published.some((m) => m.id === messageId),
    );
    const [sent] = await eventually('the message to be marked sent', async () => {
      const rows = await list(`status=sent&partitionKey=${encodeURIComponent(pk)}`);
      return rows.length ? rows : undefined;
    });
    expect(sent).toMatchObject({ id: messageId, status: 'sent', partitionKey: pk });
    expect(await list(`status=dead&partitionKey=${encodeURIComponent(pk)}`)).toEqual([]);
  });

  it('re-queues a sent message (it is published again) and lists by partition key alone', async () => {
    const pk = `pk-${randomUUID()}`;
    const created = await post(randomUUID(), { name: 'fine', partitionKey: pk });
    const { messageId } = (await created.json()) as { messageId: string };
    await eventually(
      'sent',
      async () => (await list(`status=sent&partitionKey=${encodeURIComponent(pk)}`)).length === 1,
    );
    const before = published.filter((m) => m.id === messageId).length;
    const r = await json(`/admin/outbox/${encodeURIComponent(messageId)}/requeue`, {
      method: 'POST',
    });
    expect(r.status).toBe(200);
    await eventually(
      'a second publication',
      async () => published.filter((m) => m.id === messageId).length === before + 1,
    );
    const byKey = await list(`partitionKey=${encodeURIComponent(pk)}`);
    expect(byKey.map((m) => m.id)).toEqual([messageId]);
  });

  it('purges dead messages, one or all, and refuses other states with problem+json', async () => {
    failing = true;
    const pk = `pk-${randomUUID()}`;
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const r = await post(randomUUID(), { name: `doomed-${n}`, partitionKey: pk });
      ids.push(((await r.json()) as { messageId: string }).messageId);
    }
    await eventually(
      'three dead',
      async () => (await list(`status=dead&partitionKey=${encodeURIComponent(pk)}`)).length === 3,
    );

    const one = await json(`/admin/outbox/${encodeURIComponent(ids[0])}`, { method: 'DELETE' });
    expect(one.status).toBe(204);
    expect((await json(`/admin/outbox/${encodeURIComponent(ids[0])}`)).status).toBe(404);

    failing = false;
    const sentPk = `pk-${randomUUID()}`;
    const sentRes = await post(randomUUID(), { name: 'fine', partitionKey: sentPk });
    const sentId = ((await sentRes.json()) as { messageId: string }).messageId;
    await eventually(
      'sent',
      async () =>
        (await list(`status=sent&partitionKey=${encodeURIComponent(sentPk)}`)).length === 1,
    );
    const refused = await json(`/admin/outbox/${encodeURIComponent(sentId)}`, { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect(refused.type).toContain('application/problem+json');

    const all = await json('/admin/outbox/dead', { method: 'DELETE' });
    expect(all.status).toBe(200);
    expect(all.body.purged).toBeGreaterThanOrEqual(2);
    expect(await list(`status=dead`)).toEqual([]);
    expect((await json(`/admin/outbox/${encodeURIComponent(sentId)}`)).body).toMatchObject({
      id: sentId,
      status: 'sent',
    });
  });

  it('counts, re-queues and purges dead messages by filter; rows outside the filter are untouched', async () => {
    failing = true;
    const [pkA, pkB] = [`pk-${randomUUID()}`, `pk-${randomUUID()}`];
    const idsOf = async (pk: string, n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const r = await post(randomUUID(), { name: `doomed-f${i}`, partitionKey: pk });
        ids.push(((await r.json()) as { messageId: string }).messageId);
      }
      return ids;
    };
    const a = await idsOf(pkA, 3);
    const b = await idsOf(pkB, 1);
    for (const pk of [pkA, pkB]) {
      await eventually(
        'dead letters',
        async () =>
          (await list(`status=dead&partitionKey=${encodeURIComponent(pk)}`)).length ===
          (pk === pkA ? 3 : 1),
      );
    }
    const dead = await json(`/admin/outbox/${a[0]}`);
    expect(dead.body.failures).toEqual([
      expect.objectContaining({ attempt: 1, error: 'Error', message: 'broker says no' }),
    ]);

    const q = `partitionKey=${encodeURIComponent(pkA)}&error=BROKER%20SAYS`;
    const count = await json(`/admin/outbox/dead/count?${q}`);
    expect(count).toMatchObject({
      status: 200,
      body: { count: 3, filter: { partitionKey: pkA, error: 'BROKER SAYS' } },
    });
    failing = false;
    const requeued = await json(`/admin/outbox/dead/requeue?${q}`, { method: 'POST' });
    expect(requeued.status).toBe(200);
    expect(requeued.body.requeued).toBe(3);
    for (const id of a) {
      await eventually(
        'the re-queued message sent',
        async () => (await json(`/admin/outbox/${id}`)).body.status === 'sent',
      );
    }
    // Attempts counted again from the requeue; the history stays.
    expect((await json(`/admin/outbox/${a[0]}`)).body).toMatchObject({
      attempts: 1,
      failures: [expect.objectContaining({ attempt: 1 })],
    });
    expect((await json(`/admin/outbox/${b[0]}`)).body.status).toBe('dead');

    const purged = await json(`/admin/outbox/dead/purge?partitionKey=${encodeURIComponent(pkB)}`, {
      method: 'POST',
    });
    expect(purged.body).toMatchObject({ purged: 1, filter: { partitionKey: pkB } });
    expect((await json(`/admin/outbox/${b[0]}`)).status).toBe(404);
    expect((await json(`/admin/outbox/${a[0]}`)).body.status).toBe('sent');
  });

  it('refuses a dead-letter filter that is empty, misspelt or malformed, with problem+json', async () => {
    const refused = async (path: string, method = 'POST') => {
      const r = await json(path, { method });
      expect(r.status).toBe(400);
      expect(r.type).toContain('application/problem+json');
      return r.body.detail as string;
    };
    expect(await refused('/admin/outbox/dead/purge')).toContain('needs at least one criterion');
    expect(await refused('/admin/outbox/dead/requeue?type=')).toContain('or all=true');
    expect(await refused('/admin/outbox/dead/purge?typ=thing.created')).toBe(
      'Unknown filter parameter "typ"; the filter takes type, partitionKey, failedAfter, failedBefore, error, all.',
    );
    expect(await refused('/admin/outbox/dead/count?failedAfter=yesterday', 'GET')).toContain(
      'failedAfter must be an ISO 8601 date',
    );
    expect(
      await refused('/admin/outbox/dead/count?failedBefore=2026-01-01T10:00:00', 'GET'),
    ).toContain('with a zone');
    expect(
      await refused(
        '/admin/outbox/dead/count?failedAfter=2026-02-01&failedBefore=2026-01-01',
        'GET',
      ),
    ).toBe('failedAfter must be before failedBefore.');
    expect(await refused('/admin/outbox/dead/purge?all=yes')).toBe(
      'all must be true when given; got "yes".',
    );
    expect(await refused('/admin/outbox/dead/purge?type=a&type=b')).toContain('more than once');
    const all = await json('/admin/outbox/dead/count?all=true');
    expect(all).toMatchObject({ status: 200, body: { filter: { all: true } } });
    expect(all.body.count).toBe((await list('status=dead&limit=1000')).length);
  });

  it('answers bad input and unknown ids with problem+json, and refuses to re-queue a pending message', async () => {
    const bad = await json('/admin/outbox?status=bogus');
    expect(bad.status).toBe(400);
    expect(bad.type).toContain('application/problem+json');
    expect(bad.body.detail).toContain('pending, sent, dead');
    expect((await json('/admin/outbox?limit=0')).status).toBe(400);
    expect((await json('/admin/outbox?afterSeq=abc')).status).toBe(400);

    const missing = await json(`/admin/outbox/${randomUUID()}/requeue`, { method: 'POST' });
    expect(missing.status).toBe(404);
    expect(missing.type).toContain('application/problem+json');

    // A pending message that is not due yet: the relay leaves it alone.
    const sql = sqlFor(kind, dataSourceOf(app));
    const id = `not-due-${randomUUID()}`;
    await sql(
      `INSERT INTO outbox_messages (id, type, payload, status, attempts, next_attempt_at, created_at) VALUES (?, 'thing.created', '{}', 'pending', 0, ${clockFor(kind)(3_600_000)}, ${clockFor(kind)(0)})`,
      [id],
    );
    const pending = await json(`/admin/outbox/${id}/requeue`, { method: 'POST' });
    expect(pending.status).toBe(409);
    expect(pending.body.detail).toContain('pending');
    expect((await app.get(IdempotencyAdminService).requeueOutboxMessage(id)).outcome).toBe(
      'not-requeueable',
    );
  });

  it('inspects and evicts an idempotency key by scope and key; the next request with it runs again', async () => {
    const key = randomUUID();
    expect((await post(key, { name: 'a', partitionKey: 'k' })).status).toBe(201);
    const replay = await post(key, { name: 'a', partitionKey: 'k' });
    expect(replay.headers.get('idempotency-replayed')).toBe('true');

    const q = `method=POST&route=${encodeURIComponent('/things')}&key=${encodeURIComponent(key)}`;
    const seen = await json(`/admin/idempotency?${q}`);
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({
      scope: '-|-|POST /things',
      state: 'completed',
      responseStatus: 201,
      expired: false,
      encrypted: false,
    });
    expect(seen.body.keyHash).toMatch(/^[0-9a-f]{16}$/);
    expect(seen.body.responseBodyBytes).toBeGreaterThan(0);
    expect(JSON.stringify(seen.body)).not.toContain('"name"');
    // The same record by its stored scope string.
    expect(
      (
        await json(
          `/admin/idempotency?scope=${encodeURIComponent('-|-|POST /things')}&key=${encodeURIComponent(key)}`,
        )
      ).status,
    ).toBe(200);

    expect((await json(`/admin/idempotency?${q}`, { method: 'DELETE' })).status).toBe(204);
    expect((await json(`/admin/idempotency?${q}`)).status).toBe(404);
    expect((await json(`/admin/idempotency?${q}`, { method: 'DELETE' })).status).toBe(404);

    // Evicted: the same key with another body is a new request, not a 422.
    const again = await post(key, { name: 'b', partitionKey: 'k' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replayed')).toBeNull();
    expect(((await again.json()) as any).name).toBe('b');

    const noKey = await json('/admin/idempotency?method=POST&route=/things');
    expect(noKey.status).toBe(400);
    expect(noKey.type).toContain('application/problem+json');
  });
});
