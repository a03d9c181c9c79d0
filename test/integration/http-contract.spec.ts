import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDataSource, type TestDatabase } from '../support/databases';
import {
  databasePlatformCases,
  startAppOnDatabase,
  stopAppOnDatabase,
} from '../support/app-on-database';
import { appSetupTimeoutMs, startSampleApp, warmSampleAppPool } from '../support/sample-app';

const cases = databasePlatformCases();

const body = (over: object = {}) => ({
  amount: 12.5,
  currency: 'USD',
  customerId: 'cust-1',
  ...over,
});

describe.each(cases)('HTTP idempotency contract on %s / %s', (kind, platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) => startSampleApp(dbUrl, platform)));
    ds = await openDataSource(db.url);
    // The in-flight duplicate and the 50-request storm below meet warm connections, as in a running service.
    await warmSampleAppPool(url);
  }, appSetupTimeoutMs(kind));

  afterAll(() => stopAppOnDatabase({ ds, app, db }), appSetupTimeoutMs(kind));

  const post = (key: string | undefined, payload: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}/payments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(key !== undefined ? { 'idempotency-key': key } : {}),
        ...headers,
      },
      body: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });

  const paymentsOf = async (customerId: string) =>
    (await (await fetch(`${url}/payments?customerId=${customerId}`)).json()) as any[];

  it('creates once and replays the same status, bytes and headers with Idempotency-Replayed', async () => {
    const key = randomUUID();
    const first = await post(key, body({ customerId: 'replay-1' }));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    const firstBytes = Buffer.from(await first.arrayBuffer());
    const created = JSON.parse(firstBytes.toString());
    expect(created).toMatchObject({
      amount: 12.5,
      currency: 'USD',
      customerId: 'replay-1',
      status: 'captured',
    });
    expect(first.headers.get('location')).toBe(`/payments/${created.id}`);

    const again = await post(key, body({ customerId: 'replay-1' }));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(Buffer.from(await again.arrayBuffer()).equals(firstBytes)).toBe(true);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(await paymentsOf('replay-1')).toHaveLength(1);
  });

  it('treats the quoted structured-field form and the bare form as the same key', async () => {
    const key = randomUUID();
    const first = await post(key, body({ customerId: 'sf-1' }));
    const quoted = await post(`"${key}"`, body({ customerId: 'sf-1' }));
    expect(first.status).toBe(201);
    expect(quoted.headers.get('idempotency-replayed')).toBe('true');
    expect(await paymentsOf('sf-1')).toHaveLength(1);
  });

  it('ignores member order and whitespace of the JSON body', async () => {
    const key = randomUUID();
    await post(key, '{"amount":5,"currency":"USD","customerId":"jcs-1"}');
    const r = await post(key, '{ "customerId" : "jcs-1",\n "currency":"USD", "amount": 5 }');
    expect(r.status).toBe(201);
    expect(r.headers.get('idempotency-replayed')).toBe('true');
  });

  it('answers 400 problem+json for a missing key and stores nothing', async () => {
    const r = await post(undefined, body({ customerId: 'nokey' }));
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    const p = (await r.json()) as any;
    expect(p.type).toMatch(/idempotency-key-missing/);
    expect(typeof p.detail).toBe('string');
    expect(await paymentsOf('nokey')).toHaveLength(0);
  });

  it.each([
    ['empty', ''],
    ['too long', 'k'.repeat(256)],
    ['space inside', 'a b'],
    ['non-ASCII', 'clé'],
    ['unterminated quote', '"abc'],
  ])('answers 400 for an invalid key (%s)', async (_label, key) => {
    const r = await fetch(`${url}/payments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': Buffer.from(key, 'utf8').toString('latin1'),
      },
      body: JSON.stringify(body({ customerId: 'badkey' })),
    });
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(((await r.json()) as any).type).toMatch(/idempotency-key-(invalid|missing)/);
    expect(await paymentsOf('badkey')).toHaveLength(0);
  });

  it('answers 400 for a key with a no-break space (0xA0) around it: only SP and HTAB are HTTP white space', async () => {
    for (const value of ['\u00a0#', 'abc\u00a0']) {
      const r = await fetch(`${url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': value },
        body: JSON.stringify(body({ customerId: 'nbspkey' })),
      });
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).type).toMatch(/idempotency-key-invalid/);
    }
    expect(await paymentsOf('nbspkey')).toHaveLength(0);
  });

  it('accepts a key of exactly 255 characters', async () => {
    const key = 'x'.repeat(219) + randomUUID();
    expect(key).toHaveLength(255);
    expect((await post(key, body({ customerId: 'longkey' }))).status).toBe(201);
    expect(
      (await post(key, body({ customerId: 'longkey' }))).headers.get('idempotency-replayed'),
    ).toBe('true');
  });

  it('keys differing only in case are different keys', async () => {
    const key = 'CaseKey-' + randomUUID();
    expect((await post(key, body({ customerId: 'case-1' }))).status).toBe(201);
    const lower = await post(key.toLowerCase(), body({ customerId: 'case-1' }));
    expect(lower.status).toBe(201);
    expect(lower.headers.get('idempotency-replayed')).toBeNull();
    expect(await paymentsOf('case-1')).toHaveLength(2);
  });

  it('answers 422 for the same key with another payload', async () => {
    const key = randomUUID();
    await post(key, body({ customerId: 'mismatch-1' }));
    const r = await post(key, body({ customerId: 'mismatch-1', amount: 99 }));
    expect(r.status).toBe(422);
    expect(((await r.json()) as any).type).toMatch(/idempotency-key-reused/);
    expect(await paymentsOf('mismatch-1')).toHaveLength(1);
  });

  it('answers 409 with Retry-After while the first request is still running', async () => {
    const key = randomUUID();
    const slow = post(key, body({ customerId: 'inflight-1' }), { 'x-demo-delay-ms': '3000' });
    await new Promise((r) => setTimeout(r, 1000));
    const dup = await post(key, body({ customerId: 'inflight-1' }));
    expect(dup.status).toBe(409);
    expect(Number(dup.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await dup.json()) as any).type).toMatch(/in-progress/);
    expect((await slow).status).toBe(201);
    const after = await post(key, body({ customerId: 'inflight-1' }));
    expect(after.headers.get('idempotency-replayed')).toBe('true');
    expect(await paymentsOf('inflight-1')).toHaveLength(1);
  });

  it('scopes keys by tenant: the same key under another tenant is another request', async () => {
    const key = randomUUID();
    const a = await post(key, body({ customerId: 'tenant-1' }), { 'x-tenant-id': 'acme' });
    const b = await post(key, body({ customerId: 'tenant-1' }), { 'x-tenant-id': 'globex' });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotency-replayed')).toBeNull();
    expect(((await a.json()) as any).id).not.toBe(((await b.json()) as any).id);
  });

  it('rolls back and releases the key when the handler fails with 5xx', async () => {
    const key = randomUUID();
    const failed = await post(key, body({ customerId: 'fail-5xx' }), { 'x-demo-fail': '503' });
    expect(failed.status).toBe(503);
    expect(await paymentsOf('fail-5xx')).toHaveLength(0);
    const retry = await post(key, body({ customerId: 'fail-5xx' }));
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBeNull();
    expect(await paymentsOf('fail-5xx')).toHaveLength(1);
  });

  it('stores and replays a 4xx from the handler, with its writes rolled back', async () => {
    const key = randomUUID();
    const first = await post(key, body({ customerId: 'fail-4xx' }), { 'x-demo-fail': '402' });
    expect(first.status).toBe(402);
    const firstBody = await first.text();
    const again = await post(key, body({ customerId: 'fail-4xx' }), { 'x-demo-fail': '402' });
    expect(again.status).toBe(402);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await again.text()).toBe(firstBody);
    expect(await paymentsOf('fail-4xx')).toHaveLength(0);
  });

  it('stores nothing for a request rejected by validation', async () => {
    const key = randomUUID();
    const bad = await post(key, { amount: -1, currency: 'USD', customerId: 'val-1' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    const good = await post(key, body({ customerId: 'val-1' }));
    expect(good.status).toBe(201);
    expect(good.headers.get('idempotency-replayed')).toBeNull();
    const rows = await ds.query(
      `SELECT COUNT(*) AS n FROM idempotency_records WHERE state = 'completed'`,
    );
    expect(Number(rows[0].n)).toBeGreaterThan(0);
  });

  it('runs the handler body exactly once for 50 concurrent identical requests', async () => {
    const key = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        post(key, body({ customerId: 'storm-50' }), { 'x-demo-delay-ms': '200' }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1);
    expect(await paymentsOf('storm-50')).toHaveLength(1);
  });

  it('never stores Set-Cookie or Authorization in the snapshot', async () => {
    const key = randomUUID();
    await post(key, body({ customerId: 'nocookie' }), { authorization: 'Bearer secret-token' });
    const rows = await ds.query(`SELECT response_headers FROM idempotency_records`);
    for (const r of rows) {
      expect(String(r.response_headers ?? '')).not.toMatch(
        /set-cookie|authorization|secret-token/i,
      );
    }
  });
});
