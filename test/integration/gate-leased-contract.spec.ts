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
import { appSetupTimeoutMs, startSampleApp, warmSampleAppPool } from '../support/sample-app';
import { ledgerRows, paymentCount, postJson, sleep } from '../fixtures/gate/http';
import { paymentsFingerprint, paymentsScope, plantStartedRecord } from '../fixtures/gate/ledger';

const cases = databasePlatformCases();
const LEASE_MS = 8000;

const body = (customerId: string, over: object = {}) => ({
  amount: 12.5,
  currency: 'USD',
  customerId,
  ...over,
});

/**
 * The HTTP contract of POST /payments in `leased` mode (IDEMPOTENCY_MODE=leased, given to the
 * in-process sample app through its environment), over every database and both platforms, plus
 * what only leased mode has: a committed started record, Retry-After from the lease, and the
 * take-over of a lapsed lease by exactly one retry.
 */
describe.each(cases)('HTTP contract in leased mode on %s / %s', (kind, platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startSampleApp(dbUrl, platform, {
        IDEMPOTENCY_MODE: 'leased',
        IDEMPOTENCY_LEASE_MS: String(LEASE_MS),
      }),
    ));
    ds = await openDataSource(db.url);
    // A duplicate that met a cold connection would reach the key after the first request had
    // completed (the replay, not the 409).
    await warmSampleAppPool(url);
  }, appSetupTimeoutMs(kind));

  afterAll(() => stopAppOnDatabase({ ds, app, db }), appSetupTimeoutMs(kind));

  const post = (key: string | undefined, payload: unknown, headers: Record<string, string> = {}) =>
    postJson(`${url}/payments`, key, payload, headers);
  const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

  /** Waits until the reservation of `key` is committed as started (leased mode commits it before the handler). */
  async function startedRecordOf(key: string) {
    for (let i = 0; i < 200; i++) {
      const rows = await ledgerRows(ds, kind, key);
      if (rows.some((r) => r.state === 'started')) return;
      await sleep(20);
    }
    throw new Error(
      'the reservation was never committed as started: is the endpoint in leased mode?',
    );
  }

  it('creates once and replays status, bytes and headers with Idempotency-Replayed', async () => {
    const key = randomUUID();
    const c = customer('replay');
    const first = await post(key, body(c));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    expect(first.headers.get('location')).toBe(`/payments/${first.json().id}`);
    const again = await post(`"${key}"`, body(c));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(await paymentCount(ds, kind, c)).toBe(1);
  });

  it('commits the reservation first, answers a duplicate 409 with a short Retry-After (a poll, not the lease), then replays', async () => {
    const key = randomUUID();
    const c = customer('inflight');
    const slow = post(key, body(c), { 'x-demo-delay-ms': '3000' });
    await startedRecordOf(key);
    const dup = await post(key, body(c));
    expect(dup.status).toBe(409);
    expect(dup.json().type).toBe(PROBLEM_TYPES.inProgress);
    // retryAfterSeconds (1 s), not the 8 s left on the lease: the first attempt is alive and
    // renews its lease, so a client polls instead of sleeping through it (SQLite included).
    expect(Number(dup.headers.get('retry-after'))).toBe(1);
    expect((await slow).status).toBe(201);
    expect((await post(key, body(c))).headers.get('idempotency-replayed')).toBe('true');
    expect(await paymentCount(ds, kind, c)).toBe(1);
  });

  it('answers 422 for the same key with another payload', async () => {
    const key = randomUUID();
    const c = customer('mismatch');
    await post(key, body(c));
    const r = await post(key, body(c, { amount: 99 }));
    expect(r.status).toBe(422);
    expect(r.json().type).toBe(PROBLEM_TYPES.mismatch);
    expect(await paymentCount(ds, kind, c)).toBe(1);
  });

  it('scopes keys by tenant', async () => {
    const key = randomUUID();
    const c = customer('tenant');
    const a = await post(key, body(c), { 'x-tenant-id': 'acme' });
    const b = await post(key, body(c), { 'x-tenant-id': 'acme|public' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers.get('idempotency-replayed')).toBeNull();
    expect(await paymentCount(ds, kind, c)).toBe(2);
  });

  it('on a 5xx rolls the payment back and releases the committed reservation', async () => {
    const key = randomUUID();
    const c = customer('fail5xx');
    expect((await post(key, body(c), { 'x-demo-fail': '500' })).status).toBe(500);
    expect(await paymentCount(ds, kind, c)).toBe(0);
    expect(await ledgerRows(ds, kind, key)).toHaveLength(0);
    const retry = await post(key, body(c));
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBeNull();
    expect(await paymentCount(ds, kind, c)).toBe(1);
  });

  it('stores and replays a 4xx from the handler, with its writes rolled back', async () => {
    const key = randomUUID();
    const c = customer('fail4xx');
    const first = await post(key, body(c), { 'x-demo-fail': '402' });
    expect(first.status).toBe(402);
    const again = await post(key, body(c));
    expect(again.status).toBe(402);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(await paymentCount(ds, kind, c)).toBe(0);
    expect(await ledgerRows(ds, kind, key)).toEqual([
      expect.objectContaining({ state: 'completed' }),
    ]);
  });

  it('stores nothing for a request rejected by validation (the reservation is released)', async () => {
    const key = randomUUID();
    const c = customer('invalid');
    const bad = await post(key, { amount: -1, currency: 'USD', customerId: c });
    expect(bad.status).toBe(400);
    expect(await ledgerRows(ds, kind, key)).toHaveLength(0);
    expect((await post(key, body(c))).status).toBe(201);
  });

  it('runs the handler body exactly once for 50 concurrent identical requests', async () => {
    const key = randomUUID();
    const c = customer('storm');
    const results = await Promise.all(
      Array.from({ length: 50 }, () => post(key, body(c), { 'x-demo-delay-ms': '200' })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1);
    expect(await paymentCount(ds, kind, c)).toBe(1);
  });

  it('answers 409 with a short Retry-After for a started record whose owner is gone but whose lease still runs', async () => {
    const key = randomUUID();
    const c = customer('live-lease');
    await plantStartedRecord(ds, paymentsScope(), key, 30_000, paymentsFingerprint(body(c)));
    const r = await post(key, body(c));
    expect(r.status).toBe(409);
    // At most retryAfterSeconds (1 s) although 30 s are left on the lease.
    expect(Number(r.headers.get('retry-after'))).toBe(1);
    expect(await paymentCount(ds, kind, c)).toBe(0);
  });

  it('lets exactly one of many concurrent retries take over a lapsed lease', async () => {
    const key = randomUUID();
    const c = customer('takeover');
    // A lapsed lease is taken over whatever the dead attempt's request was.
    await plantStartedRecord(ds, paymentsScope(), key, 1);
    await sleep(50);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => post(key, body(c), { 'x-demo-delay-ms': '100' })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1);
    expect(await paymentCount(ds, kind, c)).toBe(1);
    const replay = await post(key, body(c));
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    expect(await ledgerRows(ds, kind, key)).toEqual([
      expect.objectContaining({ state: 'completed' }),
    ]);
  });
});
