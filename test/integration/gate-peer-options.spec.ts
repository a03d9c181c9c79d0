import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { PROBLEM_TYPES } from '../../lib';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { baseUrl, type Platform } from '../support/sample-app';
import {
  GateOptionsController,
  gateEvents,
  recordEvent,
} from '../fixtures/gate/gate-options.controller';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import { handlerEntered, holdHandler, paymentCount, postJson } from '../fixtures/gate/http';

const platforms: Platform[] = ['express', 'fastify'];
const cases = databaseKinds().flatMap((db) => platforms.map((p) => [db, p] as const));

/**
 * Issue #11: what users of the peer libraries ask for — keyResolver, fingerprint (subset,
 * function, false), skip, the replay header's name, the opt-in Idempotency-Status header, the
 * onEvent hook, problem bodies with `instance` and `retryable` — and one answer for another
 * payload while the first request is in flight (409 on every database and in both modes), over
 * every database and both platforms, per endpoint and module-wide.
 */
describe.each(cases)('Peer-parity options of the gate on %s / %s', (kind, platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let moduleWide: INestApplication;
  let url: string;
  let moduleWideUrl: string;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await startGateFixture({ dbUrl: db.url, platform, controllers: [GateOptionsController] });
    url = `${await baseUrl(app)}/gate-options`;
    // The same options given module-wide instead of per endpoint.
    moduleWide = await startGateFixture({
      dbUrl: db.url,
      platform,
      controllers: [GateOptionsController],
      options: {
        replayedHeaderName: 'Idempotent-Replayed',
        statusHeader: true,
        onEvent: recordEvent,
        fingerprint: { includeBodyPaths: ['amount'] },
      },
    });
    moduleWideUrl = `${await baseUrl(moduleWide)}/gate-options`;
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    await moduleWide?.close();
    await app?.close();
    await db?.drop();
  });

  const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;
  const payments = (c: string) => paymentCount(ds, kind, c);

  describe('keyResolver and fingerprint: false (a webhook keyed by its event id)', () => {
    it('takes the key from the body: the same event id replays, whatever the body', async () => {
      const eventId = `evt_${randomUUID()}`;
      const c = customer('webhook');
      const first = await postJson(`${url}/webhook`, undefined, { eventId, customerId: c });
      expect(first.status).toBe(201);
      expect(first.headers.get('idempotency-replayed')).toBeNull();
      const again = await postJson(`${url}/webhook`, undefined, {
        eventId,
        customerId: c,
        deliveredAt: Date.now(),
      });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotency-replayed')).toBe('true');
      expect(again.bytes.equals(first.bytes)).toBe(true);
      expect(await payments(c)).toBe(1);
    });

    it('400 problems when the resolver finds no key or an invalid one; nothing runs', async () => {
      const c = customer('webhook-bad');
      const missing = await postJson(`${url}/webhook`, undefined, { customerId: c });
      expect(missing.status).toBe(400);
      expect(missing.json()).toMatchObject({
        type: PROBLEM_TYPES.keyMissing,
        instance: '/gate-options/webhook',
        retryable: false,
      });
      const invalid = await postJson(`${url}/webhook`, undefined, {
        eventId: 'has a space',
        customerId: c,
      });
      expect(invalid.status).toBe(400);
      expect(invalid.json().type).toBe(PROBLEM_TYPES.keyInvalid);
      expect(invalid.json().detail).toContain('idempotency key');
      expect(await payments(c)).toBe(0);
    });

    it('ignores the header when a resolver is configured', async () => {
      const c = customer('webhook-header');
      const r = await postJson(`${url}/webhook`, randomUUID(), { customerId: c });
      expect(r.status).toBe(400);
      expect(r.json().type).toBe(PROBLEM_TYPES.keyMissing);
    });
  });

  describe('fingerprint as a subset of the body or a function', () => {
    it('includeBodyPaths: other fields may differ; a listed one may not', async () => {
      const key = randomUUID();
      const c = customer('subset');
      const first = await postJson(`${url}/subset`, key, { customerId: c, amount: 5, note: 'a' });
      expect(first.status).toBe(201);
      const sameParts = await postJson(`${url}/subset`, key, {
        customerId: c,
        amount: 5,
        note: 'b',
      });
      expect(sameParts.headers.get('idempotency-replayed')).toBe('true');
      const otherAmount = await postJson(`${url}/subset`, key, { customerId: c, amount: 6 });
      expect(otherAmount.status).toBe(422);
      expect(otherAmount.json()).toMatchObject({ type: PROBLEM_TYPES.mismatch, retryable: false });
      expect(await payments(c)).toBe(1);
    });

    it('a fingerprint function decides what "the same request" is', async () => {
      const key = randomUUID();
      const c = customer('custom');
      expect(
        (await postJson(`${url}/custom-fingerprint`, key, { customerId: c, amount: 7 })).status,
      ).toBe(201);
      const same = await postJson(`${url}/custom-fingerprint`, key, {
        customerId: `${c}-other`,
        amount: 7,
      });
      expect(same.headers.get('idempotency-replayed')).toBe('true');
      const other = await postJson(`${url}/custom-fingerprint`, key, { customerId: c, amount: 8 });
      expect(other.status).toBe(422);
      expect(await payments(c)).toBe(1);
    });
  });

  it('skip: a request the predicate picks runs unguarded, others are guarded', async () => {
    const key = randomUUID();
    const c = customer('skip');
    for (let i = 0; i < 2; i++) {
      const r = await postJson(`${url}/skip`, key, { customerId: c }, { 'x-internal': 'yes' });
      expect(r.status).toBe(201);
      expect(r.headers.get('idempotency-replayed')).toBeNull();
    }
    expect(await payments(c)).toBe(2);
    // Without the header the key is required and guarded as usual.
    expect((await postJson(`${url}/skip`, undefined, { customerId: c })).status).toBe(400);
    const guarded = await postJson(`${url}/skip`, key, { customerId: c });
    expect(guarded.status).toBe(201);
    expect(
      (await postJson(`${url}/skip`, key, { customerId: c })).headers.get('idempotency-replayed'),
    ).toBe('true');
    expect(await payments(c)).toBe(3);
  });

  it.each([
    ['per endpoint', () => `${url}/stripe`],
    ['module-wide', () => `${moduleWideUrl}/plain`],
  ])('replayedHeaderName and statusHeader (%s)', async (_where, route) => {
    const key = randomUUID();
    const c = customer('stripe');
    const first = await postJson(route(), key, { customerId: c, amount: 3 });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-status')).toBe('created');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await postJson(route(), key, { customerId: c, amount: 3 });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('idempotency-replayed')).toBeNull();
    expect(again.headers.get('idempotency-status')).toBe('replayed');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(await payments(c)).toBe(1);
  });

  it('the status header is opt-in: off by default', async () => {
    const key = randomUUID();
    const c = customer('no-status');
    const first = await postJson(`${url}/plain`, key, { customerId: c });
    expect(first.headers.get('idempotency-status')).toBeNull();
    const again = await postJson(`${url}/plain`, key, { customerId: c });
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.headers.get('idempotency-status')).toBeNull();
  });

  it.each([
    ['per endpoint', () => `${url}/events`, '/gate-options/events'],
    ['module-wide', () => `${moduleWideUrl}/plain`, '/gate-options/plain'],
  ])('onEvent tells created, replayed, conflict and mismatch (%s)', async (_where, route, path) => {
    const key = randomUUID();
    const c = customer('events');
    const requestId = randomUUID();
    const mine = () => gateEvents.filter((e) => e.requestId === requestId);
    const h = { 'x-request-id': requestId };
    const entered = handlerEntered(c);
    // The first request stays in its handler until the duplicate is answered.
    const release = holdHandler(c);
    const slow = postJson(route(), key, { customerId: c, amount: 1 }, h);
    try {
      await entered;
      expect((await postJson(route(), key, { customerId: c, amount: 1 }, h)).status).toBe(409);
    } finally {
      release();
    }
    expect((await slow).status).toBe(201);
    expect((await postJson(route(), key, { customerId: c, amount: 1 }, h)).status).toBe(201);
    expect((await postJson(route(), key, { customerId: c, amount: 2 }, h)).status).toBe(422);
    expect(mine().map((e) => e.kind)).toEqual(['conflict', 'created', 'replayed', 'mismatch']);
    expect(mine().map((e) => e.status)).toEqual([409, 201, 201, 422]);
    for (const e of mine()) {
      expect(e).toMatchObject({ method: 'POST', path, mode: 'transactional' });
      expect(e.keyHash).toMatch(/^[0-9a-f]{16}$/);
      expect(JSON.stringify(e)).not.toContain(key);
    }
  });

  it.each([
    ['transactional', 'in-flight'],
    ['leased', 'in-flight-leased'],
  ])(
    '%s: another payload while the first is in flight gets 409 (retryable), then 422 once it is done',
    async (_mode, route) => {
      const key = randomUUID();
      const c = customer('inflight');
      const entered = handlerEntered(c);
      // The first request stays in its handler until the other payload is answered.
      const release = holdHandler(c);
      const slow = postJson(`${url}/${route}`, key, { customerId: c, amount: 1 });
      let during: Awaited<ReturnType<typeof postJson>>;
      try {
        await entered;
        during = await postJson(`${url}/${route}`, key, { customerId: c, amount: 2 });
      } finally {
        release();
      }
      expect(during.status).toBe(409);
      expect(during.json()).toMatchObject({
        type: PROBLEM_TYPES.inProgress,
        instance: `/gate-options/${route}`,
        retryable: true,
      });
      expect(Number(during.headers.get('retry-after'))).toBe(1);
      expect((await slow).status).toBe(201);
      const after = await postJson(`${url}/${route}`, key, { customerId: c, amount: 2 });
      expect(after.status).toBe(422);
      expect(after.json()).toMatchObject({ type: PROBLEM_TYPES.mismatch, retryable: false });
      expect(await payments(c)).toBe(1);
    },
  );

  it('scopes a key to the resource: two path parameters, each its own request', async () => {
    const key = randomUUID();
    const c = customer('items');
    const put = (path: string) =>
      fetch(`${url}${path}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ customerId: c }),
      });
    const a = await put('/accounts/acc-1/items/x');
    const b = await put('/accounts/acc-2/items/x');
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.headers.get('idempotency-replayed')).toBeNull();
    expect(((await b.json()) as any).account).toBe('acc-2');
    // Percent-encoded unreserved characters name the same resource: a replay.
    const encoded = await put('/accounts/%61cc-1/items/x');
    expect(encoded.headers.get('idempotency-replayed')).toBe('true');
    if (platform === 'express') {
      // Express routes a trailing slash to the same handler: the same resource, a replay.
      const slash = await put('/accounts/acc-1/items/x/');
      expect(slash.headers.get('idempotency-replayed')).toBe('true');
    }
    expect(await payments(c)).toBe(2);
  });
});
