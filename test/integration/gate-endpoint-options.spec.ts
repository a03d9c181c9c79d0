import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { PROBLEM_TYPES } from '../../lib';
import { openDataSource, type TestDatabase } from '../support/databases';
import {
  databasePlatformCases,
  startAppOnDatabase,
  stopAppOnDatabase,
} from '../support/app-on-database';
import { appSetupTimeoutMs, warmSampleAppPool } from '../support/sample-app';
import {
  derivedKeys,
  handlerEvents,
  SHORT_LEASE_MS,
} from '../fixtures/gate/gate-fixture.controller';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import {
  handlerEntered,
  holdHandler,
  ledgerRows,
  paymentCount,
  postJson,
} from '../fixtures/gate/http';
import { plantExpiredRecord } from '../fixtures/gate/ledger';
import { buildScope } from '../../lib/gate/request-scope';

const cases = databasePlatformCases();

/**
 * Endpoint options of @Idempotent() on a small fixture app (test/fixtures/gate), over every
 * database and both platforms: the `wait` in-progress policy in both modes, `required: false`,
 * answers that cannot be stored (a StreamableFile, a body over maxResponseBytes) and
 * `store-status-only`, and the derived downstream key.
 */
describe.each(cases)('@Idempotent() endpoint options on %s / %s', (kind, platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startGateFixture({ dbUrl, platform }),
    ));
    ds = await openDataSource(db.url);
    // The lease renewals and the retries below must meet warm connections (Babelfish starts a
    // cold connection's first batch late), as in a running service. Leased: the claim, the
    // transaction and the renewals each take a connection.
    await warmSampleAppPool(url, 10, { path: '/gate/wait-leased', delayHeader: 'x-delay-ms' });
  }, appSetupTimeoutMs(kind));

  afterAll(() => stopAppOnDatabase({ ds, app, db }), appSetupTimeoutMs(kind));

  const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;
  /** How long the first request runs while a duplicate waits out a 300 ms bound (Babelfish answers slowly under load). */
  const boundTestDelayMs = kind === 'mssql' ? 2500 : 1100;

  it('leased: renews the lease while a handler outlives it, so a retry meanwhile gets 409 and never takes over', async () => {
    const key = randomUUID();
    const c = customer('renew');
    let runs = 0;
    const counted = () => runs++;
    handlerEvents.on(`enter:${c}`, counted);
    try {
      const entered = handlerEntered(c);
      // The handler runs until the retry is answered (held), on a SHORT_LEASE_MS lease.
      const release = holdHandler(c);
      const first = postJson(`${url}/gate/short-lease`, key, { customerId: c });
      let retry: Awaited<ReturnType<typeof postJson>>;
      let runsAtRetry: number;
      try {
        await entered;
        // 1.5 leases later: without renewal this retry would take the key over and run the
        // handler again.
        await new Promise((r) => setTimeout(r, 1.5 * SHORT_LEASE_MS));
        retry = await postJson(`${url}/gate/short-lease`, key, { customerId: c });
        runsAtRetry = runs;
      } finally {
        release();
      }
      // Together, so that a failure says whether the key was taken over (the handler ran twice)
      // or the retry failed otherwise.
      expect({ status: retry.status, runs: runsAtRetry }).toEqual({ status: 409, runs: 1 });
      expect(retry.json().type).toBe(PROBLEM_TYPES.inProgress);
      const original = await first;
      expect(original.status).toBe(201);
      expect(runs).toBe(1);
      const replay = await postJson(`${url}/gate/short-lease`, key, { customerId: c });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotency-replayed')).toBe('true');
      expect(replay.bytes.equals(original.bytes)).toBe(true);
      expect(await paymentCount(ds, kind, c)).toBe(1);
    } finally {
      handlerEvents.off(`enter:${c}`, counted);
    }
  });

  describe.each([
    ['transactional', 'wait'],
    ['leased', 'wait-leased'],
  ])('in-progress policy `wait` (%s mode)', (_mode, route) => {
    it('waits for the first request, then replays its answer', async () => {
      const key = randomUUID();
      const c = customer('wait');
      const entered = handlerEntered(c);
      let firstSettled = false;
      const first = postJson(
        `${url}/gate/${route}`,
        key,
        { customerId: c },
        { 'x-delay-ms': '700' },
      );
      void first.then(() => (firstSettled = true));
      await entered;
      expect(firstSettled).toBe(false); // the premise: the duplicate arrives while the first runs
      const second = await postJson(`${url}/gate/${route}`, key, { customerId: c });
      const original = await first;
      expect(original.status).toBe(201);
      expect(second.status).toBe(201);
      expect(second.headers.get('idempotency-replayed')).toBe('true');
      expect(second.bytes.equals(original.bytes)).toBe(true);
      expect(await paymentCount(ds, kind, c)).toBe(1);
    });

    it('answers 409 with Retry-After once the wait bound has passed, and never runs the handler twice', async () => {
      const key = randomUUID();
      const c = customer('waitshort');
      const entered = handlerEntered(c);
      let firstSettled = false;
      const first = postJson(
        `${url}/gate/${route.replace('wait', 'wait-short')}`,
        key,
        { customerId: c },
        { 'x-delay-ms': String(boundTestDelayMs) },
      );
      void first.then(() => (firstSettled = true));
      await entered;
      const second = await postJson(`${url}/gate/${route.replace('wait', 'wait-short')}`, key, {
        customerId: c,
      });
      expect(firstSettled).toBe(false); // the 409 came while the first still ran, after the 300 ms bound
      expect(second.status).toBe(409);
      expect(second.headers.get('content-type')).toContain('application/problem+json');
      expect(second.json().type).toBe(PROBLEM_TYPES.inProgress);
      expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await first).status).toBe(201);
      expect(await paymentCount(ds, kind, c)).toBe(1);
    });

    it('does not wait on a key reused with another request: 422 at once', async () => {
      const key = randomUUID();
      const c = customer('waitmismatch');
      expect((await postJson(`${url}/gate/${route}`, key, { customerId: c })).status).toBe(201);
      const other = await postJson(`${url}/gate/${route}`, key, { customerId: c, amount: 99 });
      expect(other.status).toBe(422);
      expect(other.json().type).toBe(PROBLEM_TYPES.mismatch);
    });
  });

  describe('required: false', () => {
    it('runs the handler without a key, every time, and stores nothing', async () => {
      const c = customer('optional');
      const a = await postJson(`${url}/gate/optional`, undefined, { customerId: c });
      const b = await postJson(`${url}/gate/optional`, undefined, { customerId: c });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(a.json().guarded).toBe(false);
      expect(b.headers.get('idempotency-replayed')).toBeNull();
      expect(await paymentCount(ds, kind, c)).toBe(2);
    });

    it('still guards a request that carries a key', async () => {
      const key = randomUUID();
      const c = customer('optional-keyed');
      const a = await postJson(`${url}/gate/optional`, key, { customerId: c });
      const b = await postJson(`${url}/gate/optional`, key, { customerId: c });
      expect(a.json().guarded).toBe(true);
      expect(b.headers.get('idempotency-replayed')).toBe('true');
      expect(b.bytes.equals(a.bytes)).toBe(true);
      expect(await paymentCount(ds, kind, c)).toBe(1);
      expect((await postJson(`${url}/gate/optional`, 'bad key', { customerId: c })).status).toBe(
        400,
      );
    });
  });

  describe('answers that cannot be stored', () => {
    it('a StreamableFile is a clear 500 problem, and nothing is committed', async () => {
      const key = randomUUID();
      const c = customer('file');
      const r = await postJson(`${url}/gate/file`, key, { customerId: c });
      expect(r.status).toBe(500);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.json().type).toBe(PROBLEM_TYPES.notSnapshottable);
      expect(r.text()).not.toContain('a file that cannot be stored');
      expect(await paymentCount(ds, kind, c)).toBe(0);
      expect(await ledgerRows(ds, kind, key)).toHaveLength(0);
      // The key stays free: a retry runs (and fails) again instead of replaying or waiting.
      expect((await postJson(`${url}/gate/file`, key, { customerId: c })).json().type).toBe(
        PROBLEM_TYPES.notSnapshottable,
      );
    });

    it.each(['large', 'large-leased'])(
      'a body over maxResponseBytes is a 500 problem with nothing committed (/gate/%s)',
      async (route) => {
        const key = randomUUID();
        const c = customer(route);
        const r = await postJson(`${url}/gate/${route}`, key, { customerId: c });
        expect(r.status).toBe(500);
        expect(r.headers.get('content-type')).toContain('application/problem+json');
        expect(r.json()).toMatchObject({ type: PROBLEM_TYPES.responseTooLarge, status: 500 });
        expect(r.text()).not.toContain('xxxxxxxx');
        expect(await paymentCount(ds, kind, c)).toBe(0);
        expect(await ledgerRows(ds, kind, key)).toHaveLength(0);
      },
    );

    it('store-status-only: the first answer is whole; the replay has its status and headers and an empty body', async () => {
      const key = randomUUID();
      const c = customer('statusonly');
      const first = await postJson(`${url}/gate/large-status-only`, key, { customerId: c });
      expect(first.status).toBe(201);
      expect(first.bytes.length).toBeGreaterThan(256);
      expect(first.json().padding).toHaveLength(2000);
      const replay = await postJson(`${url}/gate/large-status-only`, key, { customerId: c });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotency-replayed')).toBe('true');
      expect(replay.headers.get('idempotency-replay-body-omitted')).toBe('true');
      expect(replay.headers.get('location')).toBe(first.headers.get('location'));
      expect(replay.bytes).toHaveLength(0);
      expect(await paymentCount(ds, kind, c)).toBe(1);
      expect(await ledgerRows(ds, kind, key)).toEqual([
        expect.objectContaining({ state: 'completed' }),
      ]);
    });
  });

  describe('a 4xx from the handler', () => {
    it('replaces an expired record of its key (after its own rollback) and is replayed', async () => {
      const key = randomUUID();
      const c = customer('expired4xx');
      await plantExpiredRecord(ds, buildScope('-', '-', 'POST', '/gate/derived'), key);
      const failed = await postJson(
        `${url}/gate/derived`,
        key,
        { customerId: c },
        { 'x-fail': '402' },
      );
      expect(failed.status).toBe(402);
      expect(failed.headers.get('idempotency-replayed')).toBeNull();
      // Stored, so the next attempt (which would succeed) gets the 402 back instead of running.
      const replay = await postJson(`${url}/gate/derived`, key, { customerId: c });
      expect(replay.status).toBe(402);
      expect(replay.headers.get('idempotency-replayed')).toBe('true');
      expect(replay.bytes.equals(failed.bytes)).toBe(true);
      expect(await paymentCount(ds, kind, c)).toBe(0);
      expect(await ledgerRows(ds, kind, key)).toEqual([
        expect.objectContaining({ state: 'completed', response_status: 402 }),
      ]);
    });
  });

  describe('IdempotencyContext and @IdempotencyKey()', () => {
    it('give the handler the key and a derived downstream key that is the same on every retry', async () => {
      const key = randomUUID();
      const c = customer('derived');
      const failed = await postJson(
        `${url}/gate/derived`,
        key,
        { customerId: c },
        { 'x-fail': '503' },
      );
      expect(failed.status).toBe(503);
      const ok = await postJson(`${url}/gate/derived`, key, { customerId: c });
      expect(ok.status).toBe(201);
      const replay = await postJson(`${url}/gate/derived`, key, { customerId: c });
      expect(replay.json().chargeKey).toBe(ok.json().chargeKey);

      const seen = derivedKeys.filter((d) => d.customerId === c);
      expect(seen).toHaveLength(2); // the failed attempt and the retry ran the body; the replay did not
      expect(seen[0].derived).toBe(seen[1].derived);
      expect(seen[0].derived).toBe(ok.json().chargeKey);
      expect(seen[0].derived).toMatch(/^[0-9a-f]{64}$/);
      expect(seen[0].derived).not.toContain(key);
      expect(seen.every((d) => d.key === key && d.fromDecorator === key)).toBe(true);
      expect(await paymentCount(ds, kind, c)).toBe(1);

      const other = await postJson(`${url}/gate/derived`, randomUUID(), { customerId: c });
      expect(other.json().chargeKey).not.toBe(seen[0].derived);
    });
  });
});
