import { randomBytes, randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { startCookieApp } from '../fixtures/security/cookie-app.fixture';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { type AppProcess, baseUrl, spawnSampleApp } from '../support/sample-app';

const kinds = databaseKinds();
const body = (customerId: string) => JSON.stringify({ amount: 7, currency: 'USD', customerId });

describe.each(kinds)('security on %s', (kind) => {
  let db: TestDatabase;
  let app: AppProcess;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await spawnSampleApp({ DB_URL: db.url, LOG_LEVEL: 'debug' });
    ds = await openDataSource(db.url);
  }, 120_000);

  afterAll(async () => {
    await ds?.destroy();
    await app?.kill();
    await db?.drop();
  });

  const post = (key: string, customerId: string, headers: Record<string, string> = {}) =>
    fetch(`${app.url}/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key, ...headers },
      body: body(customerId),
    });

  it("one tenant or principal never receives another one's stored response, even with the same key and body", async () => {
    const key = randomUUID();
    const identities: Array<Record<string, string>> = [
      { 'x-tenant-id': 'acme' },
      { 'x-tenant-id': 'globex' },
      { 'x-tenant-id': 'acme', authorization: 'Bearer alice' },
      { 'x-tenant-id': 'acme', authorization: 'Bearer bob' },
      { 'x-tenant-id': 'acme|x' },
      { 'x-tenant-id': 'acme%7Cx' },
    ];
    const first = await Promise.all(identities.map((h) => post(key, 'shared-customer', h)));
    const ids = await Promise.all(
      first.map(async (r) => (expect(r.status).toBe(201), ((await r.json()) as any).id)),
    );
    expect(new Set(ids).size).toBe(identities.length);
    // Each identity's retry replays its own answer, never another's.
    for (let i = 0; i < identities.length; i++) {
      const again = await post(key, 'shared-customer', identities[i]);
      expect(again.headers.get('idempotency-replayed')).toBe('true');
      expect(((await again.json()) as any).id).toBe(ids[i]);
    }
  });

  it('logs name keys only by hash', async () => {
    const key = `secret-key-${randomUUID()}`;
    await post(key, 'log-1');
    await post(key, 'log-1');
    await post(key, 'log-2'); // mismatch is logged
    await new Promise((r) => setTimeout(r, 200));
    const out = app.output();
    expect(out).toMatch(/"keyHash":"[0-9a-f]{16}"/);
    expect(out).toContain('idempotency.replay');
    expect(out).not.toContain(key);
    expect(out).not.toContain('log-2');
  });
});

describe.each(kinds)('encryption at rest on %s', (kind) => {
  let db: TestDatabase;
  let app: AppProcess;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await spawnSampleApp({
      DB_URL: db.url,
      IDEMPOTENCY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    });
    ds = await openDataSource(db.url);
  }, 120_000);

  afterAll(async () => {
    await ds?.destroy();
    await app?.kill();
    await db?.drop();
  });

  it('a database dump shows neither the response body nor its headers, and replays still work', async () => {
    const marker = `cust-${randomUUID()}`;
    const key = randomUUID();
    const send = () =>
      fetch(`${app.url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: body(marker),
      });
    const first = await send();
    const firstText = await first.text();
    const rows = await ds.query('SELECT response_headers, response_body FROM idempotency_records');
    const dump = rows
      .map(
        (r: any) =>
          `${r.response_headers} ${Buffer.from(r.response_body ?? []).toString('latin1')}`,
      )
      .join('\n');
    expect(dump).not.toContain(marker);
    expect(dump).not.toContain('/payments/');
    const again = await send();
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
  });
});

describe('never stores Set-Cookie or Authorization, even when allow-listed', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    app = await startCookieApp(db.url);
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    await app?.close();
    await db?.drop();
  });

  it('replays without them and the ledger holds neither', async () => {
    const url = await baseUrl(app);
    const key = randomUUID();
    const send = () =>
      fetch(`${url}/sessions`, { method: 'POST', headers: { 'idempotency-key': key } });
    const first = await send();
    expect(first.headers.get('set-cookie')).toContain('sid=');
    const again = await send();
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.headers.get('set-cookie')).toBeNull();
    expect(again.headers.get('authorization')).toBeNull();
    expect(again.headers.get('x-visible')).toBe('kept');
    const rows = await ds.query('SELECT response_headers FROM idempotency_records');
    const dump = JSON.stringify(rows);
    expect(dump).not.toMatch(/super-secret-session|leaked-token|set-cookie|authorization/i);
  });
});
