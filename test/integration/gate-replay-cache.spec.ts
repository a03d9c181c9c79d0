import type { INestApplication } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { CleanupService, IdempotencyAdminService, type IdempotencyModuleOptions } from '../../lib';
import { buildScope } from '../../lib/gate/request-scope';
import { ReplayCache } from '../../lib/persistence/replay.cache';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { eventually } from '../support/eventually';
import { baseUrl } from '../support/sample-app';
import { StatementCounter } from '../support/statement-counter';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import { ReplayCacheController } from '../fixtures/gate/replay-cache.controller';
import {
  type Answer,
  expectReplayOf,
  paymentCount,
  postJson,
  postPipelined,
  replayed,
  sleep,
} from '../fixtures/gate/http';

/**
 * Issue #19: a retry of a completed request is answered from this process' replay cache with NO
 * statement, byte for byte as from the database, and with every rule of a database replay
 * (fingerprint mismatch → 422, tenant isolation, the replay header, encrypted bodies). Misses go
 * to the ledger; an eviction here drops the answer at once, one through another instance within
 * `maxAgeMs`; an expired record is never answered. Two app instances (A, B) share each database;
 * a third (C) runs with the cache off.
 */
describe.each(databaseKinds())('Replay cache on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  const apps: INestApplication[] = [];
  const counters = {
    a: new StatementCounter(),
    b: new StatementCounter(),
    c: new StatementCounter(),
    f: new StatementCounter(),
  };
  const urls = { a: '', b: '', c: '', f: '' };
  let appA: INestApplication;
  const encryptionKey = randomBytes(32);

  const start = async (
    name: 'a' | 'b' | 'c' | 'f',
    options: IdempotencyModuleOptions,
    platform: 'express' | 'fastify' = 'express',
  ) => {
    const app = await startGateFixture({
      dbUrl: db.url,
      platform,
      controllers: [ReplayCacheController],
      typeormLogger: counters[name],
      options: {
        encryptionKey,
        tenantResolver: (req: any) => String(req.headers['x-tenant'] ?? 'a'),
        ...options,
      },
    });
    apps.push(app);
    urls[name] = `${await baseUrl(app)}/cache`;
    return app;
  };

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    appA = await start('a', {});
    await start('b', { replayCache: { maxAgeMs: 5000 } });
    await start('c', { replayCache: false });
    await start('f', {}, 'fastify');
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    for (const app of apps) await app.close();
    await db?.drop();
  });

  const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

  /** POSTs through one instance and returns the answer with the statements it cost there. */
  const post = async (
    name: 'a' | 'b' | 'c' | 'f',
    route: string,
    key: string,
    body: unknown,
    headers: Record<string, string> = {},
  ) => {
    const { result, statements } = await counters[name].during(() =>
      postJson(`${urls[name]}/${route}`, key, body, headers),
    );
    return { answer: result, statements };
  };

  it.each(['tx', 'leased'])(
    '%s: the retry of a first execution is answered with no statement, byte for byte',
    async (route) => {
      const key = randomUUID();
      const body = { customerId: customer(route), amount: 7 };
      const first = await post('a', route, key, body);
      expect(first.answer.status).toBe(201);
      expect(first.statements.length).toBeGreaterThan(0);
      for (let i = 0; i < 3; i++) {
        const retry = await post('a', route, key, body);
        expect(retry.statements).toEqual([]);
        expectReplayOf(retry.answer, first.answer);
      }
      expect(await paymentCount(ds, kind, body.customerId)).toBe(1);
    },
  );

  it.each(['tx', 'leased'])(
    '%s: the same key with another body is refused (422) from memory too',
    async (route) => {
      const key = randomUUID();
      const body = { customerId: customer('mismatch'), amount: 7 };
      expect((await post('a', route, key, body)).answer.status).toBe(201);
      const other = await post('a', route, key, { ...body, amount: 8 });
      expect(other.statements).toEqual([]);
      expect(other.answer.status).toBe(422);
      expect(other.answer.headers.get('content-type')).toContain('application/problem+json');
      expect(await paymentCount(ds, kind, body.customerId)).toBe(1);
    },
  );

  it.each([
    ['Express', 'a'],
    ['Fastify', 'f'],
  ] as const)(
    '%s: retries that arrive together, pipelined on one connection or on many at once, each get their own answer, in order, with no statement',
    async (_platform, app) => {
      const firsts: Array<{
        key: string;
        body: { customerId: string; amount: number };
        answer: Answer;
      }> = [];
      for (let i = 0; i < 6; i++) {
        const key = randomUUID();
        const body = { customerId: customer(`together-${i}`), amount: i + 1 };
        const first = await post(app, 'tx', key, body);
        expect(first.answer.status).toBe(201);
        firsts.push({ key, body, answer: first.answer });
      }
      // One write: the six retries, one of them again, and a key reused with another body.
      const reused = { key: firsts[2].key, body: { ...firsts[2].body, amount: 99 } };
      const sent = [...firsts, firsts[0], reused, firsts[5]];
      const pipelined = await counters[app].during(() => postPipelined(`${urls[app]}/tx`, sent));
      expect(pipelined.statements).toEqual([]);
      expect(pipelined.result.map((a) => a.status)).toEqual([
        201, 201, 201, 201, 201, 201, 201, 422, 201,
      ]);
      pipelined.result.forEach((answer, i) => {
        if (sent[i] === reused) {
          expect(answer.headers.get('content-type')).toContain('application/problem+json');
        } else expectReplayOf(answer, (sent[i] as (typeof firsts)[number]).answer);
      });
      // Thirty connections at once, five retries of each key.
      const burst = await counters[app].during(() =>
        Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            postJson(`${urls[app]}/tx`, firsts[i % 6].key, firsts[i % 6].body),
          ),
        ),
      );
      expect(burst.statements).toEqual([]);
      burst.result.forEach((answer, i) => expectReplayOf(answer, firsts[i % 6].answer));
      for (const f of firsts) expect(await paymentCount(ds, kind, f.body.customerId)).toBe(1);
    },
  );

  it("another tenant's request with the same key is not answered by the first tenant's record", async () => {
    const key = randomUUID();
    const body = { customerId: customer('tenant'), amount: 3 };
    const first = await post('a', 'tx', key, body);
    expect(first.answer.status).toBe(201);
    const otherTenant = await post('a', 'tx', key, body, { 'x-tenant': 'b' });
    expect(otherTenant.answer.status).toBe(201);
    expect(replayed(otherTenant.answer)).toBeNull();
    expect(otherTenant.answer.json().id).not.toBe(first.answer.json().id);
    expect(otherTenant.statements.length).toBeGreaterThan(0);
    expect(await paymentCount(ds, kind, body.customerId)).toBe(2);
    // Each tenant's own retry comes from memory, with its own answer.
    const retryB = await post('a', 'tx', key, body, { 'x-tenant': 'b' });
    expect(retryB.statements).toEqual([]);
    expectReplayOf(retryB.answer, otherTenant.answer);
  });

  it('another instance reads the record once, then answers from memory; the cache holds the body encrypted as stored', async () => {
    const key = randomUUID();
    const body = { customerId: customer('across'), amount: 4 };
    const first = await post('a', 'tx', key, body);
    const viaB = await post('b', 'tx', key, body);
    expect(viaB.statements.length).toBeGreaterThan(0);
    expectReplayOf(viaB.answer, first.answer);
    const again = await post('b', 'tx', key, body);
    expect(again.statements).toEqual([]);
    expectReplayOf(again.answer, first.answer);

    const cached = appA
      .get(ReplayCache, { strict: false })
      .get(buildScope('a', '-', 'POST', '/cache/tx'), key);
    expect(cached).toBeDefined();
    expect(cached!.body!.includes(Buffer.from(body.customerId))).toBe(false);
    expect(first.answer.bytes.includes(Buffer.from(body.customerId))).toBe(true);
    const stored = await ds.query(
      `SELECT response_body FROM idempotency_records WHERE idempotency_key = ${placeholder(kind, 0)}`,
      [key],
    );
    expect(
      Buffer.from(stored[0].response_body ?? stored[0].RESPONSE_BODY).equals(cached!.body!),
    ).toBe(true);
  });

  it('with replayCache: false every retry goes to the database', async () => {
    const key = randomUUID();
    const body = { customerId: customer('off'), amount: 5 };
    const first = await post('c', 'tx', key, body);
    for (let i = 0; i < 2; i++) {
      const retry = await post('c', 'tx', key, body);
      expect(retry.statements.length).toBeGreaterThan(0);
      expectReplayOf(retry.answer, first.answer);
    }
  });

  it("an admin eviction drops the key's answer from this instance at once", async () => {
    const key = randomUUID();
    const body = { customerId: customer('evict'), amount: 6 };
    expect((await post('a', 'tx', key, body)).answer.status).toBe(201);
    expect((await post('a', 'tx', key, body)).statements).toEqual([]);
    const admin = appA.get(IdempotencyAdminService, { strict: false });
    expect(
      await admin.evictIdempotencyKey({ tenant: 'a', method: 'POST', route: '/cache/tx' }, key),
    ).toBe(true);
    const after = await post('a', 'tx', key, body);
    expect(after.answer.status).toBe(201);
    expect(replayed(after.answer)).toBeNull();
    expect(await paymentCount(ds, kind, body.customerId)).toBe(2);
  });

  it('an eviction through another instance stops being answered there within its maxAgeMs', async () => {
    const key = randomUUID();
    const body = { customerId: customer('remote'), amount: 6 };
    expect((await post('a', 'tx', key, body)).answer.status).toBe(201);
    expect(replayed((await post('b', 'tx', key, body)).answer)).toBe('true');
    const admin = appA.get(IdempotencyAdminService, { strict: false });
    expect(
      await admin.evictIdempotencyKey({ tenant: 'a', method: 'POST', route: '/cache/tx' }, key),
    ).toBe(true);
    // B (maxAgeMs 5 s) may replay its copy for a while, then runs the request again.
    await eventually('B runs the evicted key again', async () => {
      const r = await post('b', 'tx', key, body);
      return r.answer.status === 201 && replayed(r.answer) === null;
    });
    expect(await paymentCount(ds, kind, body.customerId)).toBe(2);
  });

  it('an expired record is never answered from memory, and a cleanup run drops it', async () => {
    const key = randomUUID();
    const body = { customerId: customer('ttl'), amount: 2 };
    const first = await post('a', 'short', key, body);
    expect(first.answer.status).toBe(201);
    const retry = await post('a', 'short', key, body);
    expect(retry.statements).toEqual([]);
    expectReplayOf(retry.answer, first.answer);
    const cache = appA.get(ReplayCache, { strict: false });
    const scope = buildScope('a', '-', 'POST', '/cache/short');
    const bytesBefore = cache.size;
    await sleep(1600);
    // The record has expired: cleanup deletes it, and drops its cache entry with it.
    await appA.get(CleanupService, { strict: false }).runOnce();
    expect(cache.size).toBeLessThan(bytesBefore);
    expect(cache.get(scope, key)).toBeUndefined();
    const after = await post('a', 'short', key, body);
    expect(after.answer.status).toBe(201);
    expect(replayed(after.answer)).toBeNull();
    expect(await paymentCount(ds, kind, body.customerId)).toBe(2);
  });
});
