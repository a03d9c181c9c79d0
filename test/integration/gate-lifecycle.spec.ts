import type { INestApplication } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { PROBLEM_TYPES } from '../../lib';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { baseUrl, type Platform, startSampleApp } from '../support/sample-app';
import { RawResponseController, SseController } from '../fixtures/gate/gate-fixture.controller';
import {
  createGateFixture,
  type Registration,
  startGateFixture,
} from '../fixtures/gate/gate-fixture.module';
import { ledgerRows, paymentCount, postJson, sleep } from '../fixtures/gate/http';

const platforms: Platform[] = ['express', 'fastify'];

/** Bootstrap checks, module registration and request-level guards that do not depend on the database (SQLite). */
describe.each(platforms)('gate lifecycle on sqlite / %s', (platform) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it.each([
    [
      '@Res() without passthrough',
      RawResponseController,
      /RawResponseController\.create\(\).*@Res\(\)/s,
    ],
    ['an @Sse() stream', SseController, /SseController\.events\(\)/],
  ])(
    'refuses to start when an @Idempotent() handler uses %s',
    async (_label, controller, message) => {
      const app = await createGateFixture({ dbUrl: db.url, platform, controllers: [controller] });
      try {
        await expect(app.init()).rejects.toThrow(message);
      } finally {
        await app.close().catch(() => undefined);
      }
    },
  );

  it.each<Registration>([
    'forRoot',
    'forRootAsync:useFactory',
    'forRootAsync:useClass',
    'forRootAsync:useExisting',
    'forRootAsync:extraProviders',
  ])('applies the options given through %s', async (registration) => {
    const app = await startGateFixture({
      dbUrl: db.url,
      platform,
      registration,
      options: { headerName: 'X-Request-Key', mismatchStatus: 409 },
    });
    try {
      const url = `${await baseUrl(app)}/gate/wait`;
      const customerId = `reg-${randomUUID().slice(0, 8)}`;
      const missing = await postJson(url, randomUUID(), { customerId });
      expect(missing.status).toBe(400);
      expect(missing.json()).toMatchObject({ type: PROBLEM_TYPES.keyMissing });
      expect(missing.json().detail).toContain('X-Request-Key');
      const key = randomUUID();
      const first = await postJson(url, undefined, { customerId }, { 'x-request-key': key });
      expect(first.status).toBe(201);
      const replay = await postJson(url, undefined, { customerId }, { 'x-request-key': key });
      expect(replay.headers.get('idempotency-replayed')).toBe('true');
      const reused = await postJson(
        url,
        undefined,
        { customerId, amount: 7 },
        { 'x-request-key': key },
      );
      expect(reused.status).toBe(409);
      expect(reused.json().type).toBe(PROBLEM_TYPES.mismatch);
    } finally {
      await app.close();
    }
  });

  it('seals stored answers under encryptionKey; an answer sealed under another key is a 500 problem, never a re-run', async () => {
    const key = randomUUID();
    const customerId = `sealed-${randomUUID().slice(0, 8)}`;
    const ds = await openDataSource(db.url);
    let app = await startGateFixture({
      dbUrl: db.url,
      platform,
      options: { encryptionKey: randomBytes(32) },
    });
    try {
      const url = `${await baseUrl(app)}/gate/wait`;
      const first = await postJson(url, key, { customerId });
      expect(first.status).toBe(201);
      const replay = await postJson(url, key, { customerId });
      expect(replay.headers.get('idempotency-replayed')).toBe('true');
      expect(replay.bytes.equals(first.bytes)).toBe(true);
      const [row] = await ds.query(
        `SELECT response_headers, response_body FROM idempotency_records WHERE idempotency_key = ?`,
        [key],
      );
      expect(JSON.parse(row.response_headers)).toEqual({ encrypted: 2, kid: 'default' });
      expect(Buffer.from(row.response_body).includes(Buffer.from(customerId))).toBe(false);
    } finally {
      await app.close();
    }
    app = await startGateFixture({
      dbUrl: db.url,
      platform,
      options: { encryptionKey: randomBytes(32) },
    });
    try {
      const r = await postJson(`${await baseUrl(app)}/gate/wait`, key, { customerId });
      expect(r.status).toBe(500);
      expect(r.json().type).toBe(PROBLEM_TYPES.storedResponseUnreadable);
      expect(await paymentCount(ds, 'sqlite', customerId)).toBe(1);
    } finally {
      await app.close();
      await ds.destroy();
    }
  });

  it('rejects a JSON body nested deeper than the canonicalizer accepts with 400, storing nothing', async () => {
    const app = await startSampleApp(db.url, platform);
    try {
      let deep: unknown = { customerId: 'deep' };
      for (let i = 0; i < 300; i++) deep = { n: deep };
      const key = randomUUID();
      const r = await postJson(`${await baseUrl(app)}/payments`, key, deep);
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.json().type).toBe(PROBLEM_TYPES.bodyTooDeep);
      const ds = await openDataSource(db.url);
      try {
        expect(await ledgerRows(ds, 'sqlite', key)).toHaveLength(0);
      } finally {
        await ds.destroy();
      }
    } finally {
      await app.close();
    }
  });
});

/** Expiry is computed on each database's clock by its dialect: checked on every database. */
describe.each(databaseKinds())('records past their expiry on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;
  const TTL_MS = 1000;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await startSampleApp(db.url, 'express', { IDEMPOTENCY_TTL_MS: String(TTL_MS) });
    url = await baseUrl(app);
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    await app?.close();
    await db?.drop();
  });

  it('count as absent: the same key runs again, and may carry another request', async () => {
    const sameKey = randomUUID();
    const reusedKey = randomUUID();
    const c = `ttl-${randomUUID().slice(0, 8)}`;
    const body = (amount: number) => ({ amount, currency: 'USD', customerId: c });

    const first = await postJson(`${url}/payments`, sameKey, body(1));
    expect(first.status).toBe(201);
    expect((await postJson(`${url}/payments`, reusedKey, body(2))).status).toBe(201);
    for (const key of [sameKey, reusedKey]) {
      expect(await ledgerRows(ds, kind, key)).toEqual([
        expect.objectContaining({ state: 'completed' }),
      ]);
    }

    await sleep(TTL_MS + 300);

    const again = await postJson(`${url}/payments`, sameKey, body(1));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replayed')).toBeNull();
    expect(again.json().id).not.toBe(first.json().id);
    const other = await postJson(`${url}/payments`, reusedKey, body(3)); // another request: no 422 once expired
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotency-replayed')).toBeNull();

    expect(await paymentCount(ds, kind, c)).toBe(4);
    // Each key still has one record (taken over in place), now holding the new answer.
    for (const key of [sameKey, reusedKey]) {
      expect(await ledgerRows(ds, kind, key)).toEqual([
        expect.objectContaining({ state: 'completed' }),
      ]);
    }
  });
});
