import type { INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import { createServer, type Server, type Socket } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import type { DataSource } from 'typeorm';
import {
  IdempotencyAdminService,
  type IdempotencyModuleOptions,
  RedisReplayCacheStore,
} from '../../lib';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { eventually } from '../support/eventually';
import { baseUrl } from '../support/sample-app';
import { StatementCounter } from '../support/statement-counter';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import { ReplayCacheController } from '../fixtures/gate/replay-cache.controller';
import { decodeCachedRecord } from '../../lib/persistence/replay-cache.store';
import { expectReplayOf, paymentCount, postJson, replayed, sleep } from '../fixtures/gate/http';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Issue #19, the replay cache's shared tier on a real Redis: a first execution on one instance is
 * replayed by another with one Redis read and no statement (ioredis on A, node-redis on B, whose
 * memory tier is off), with every rule of a database replay (422 for another payload). An entry
 * never outlives its record nor `maxAgeMs`; an admin eviction deletes it; a value that is not
 * ours, a Redis that is down and one that never answers are misses, answered by the ledger.
 */
describe.each(databaseKinds())('Replay cache, shared tier on Redis, on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  const prefix = `eo:test:${randomUUID()}:`;
  const apps: INestApplication[] = [];
  const names = ['a', 'b', 'down', 'hung'] as const;
  type Name = (typeof names)[number];
  const counters = Object.fromEntries(names.map((n) => [n, new StatementCounter()])) as Record<
    Name,
    StatementCounter
  >;
  const urls = {} as Record<Name, string>;
  const admins = {} as Record<Name, IdempotencyAdminService>;
  const encryptionKey = randomBytes(32);
  let redis: Redis;
  let nodeRedis: ReturnType<typeof createClient>;
  let downRedis: ReturnType<typeof createClient>;
  let hungRedis: Redis;
  let blackHole: Server;
  const blackHoleSockets = new Set<Socket>();

  const start = async (name: Name, replayCache: IdempotencyModuleOptions['replayCache']) => {
    const app = await startGateFixture({
      dbUrl: db.url,
      platform: 'express',
      controllers: [ReplayCacheController],
      typeormLogger: counters[name],
      options: { encryptionKey, replayCache, logger: false },
    });
    apps.push(app);
    urls[name] = `${await baseUrl(app)}/cache`;
    admins[name] = app.get(IdempotencyAdminService, { strict: false });
  };

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    redis = new Redis(REDIS_URL);
    nodeRedis = createClient({ url: REDIS_URL });
    await nodeRedis.connect();
    // Nothing listens on this port: the connection is refused, and every command fails at once.
    downRedis = createClient({ url: 'redis://127.0.0.1:1', socket: { reconnectStrategy: false } });
    downRedis.on('error', () => undefined);
    await expect(downRedis.connect()).rejects.toThrow(/ECONNREFUSED/);
    // A server that accepts the connection and never answers: every command waits forever.
    blackHole = createServer((s) => {
      blackHoleSockets.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
    hungRedis = new Redis({
      port: (blackHole.address() as { port: number }).port,
      host: '127.0.0.1',
      enableReadyCheck: false,
    });
    hungRedis.on('error', () => undefined);

    await start('a', { store: new RedisReplayCacheStore(redis, { prefix }) });
    await start('b', { maxBytes: 0, store: new RedisReplayCacheStore(nodeRedis, { prefix }) });
    await start('down', { maxBytes: 0, store: new RedisReplayCacheStore(downRedis, { prefix }) });
    await start('hung', {
      maxBytes: 0,
      storeTimeoutMs: 100,
      store: new RedisReplayCacheStore(hungRedis, { prefix }),
    });
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    for (const app of apps) await app.close();
    const left = redis ? await redis.keys(`${prefix}*`) : [];
    if (left.length) await redis.del(...left);
    await redis?.quit();
    await nodeRedis?.quit();
    hungRedis?.disconnect();
    for (const s of blackHoleSockets) s.destroy();
    await new Promise((r) => blackHole?.close(r));
    await db?.drop();
  });

  const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

  const post = async (name: Name, route: string, key: string, body: unknown) => {
    const { result, statements } = await counters[name].during(() =>
      postJson(`${urls[name]}/${route}`, key, body),
    );
    return { answer: result, statements };
  };

  /** The Redis key this test's stores wrote for an idempotency key (waits for the write). */
  const sharedEntry = (key: string) =>
    eventually(`the shared entry of ${key}`, async () => {
      const found = (await redis.keys(`${prefix}*`)).filter((k) => k.endsWith(key));
      return found.length === 1 ? found[0] : undefined;
    });

  it.each(['tx', 'leased'])(
    '%s: a first execution on A is replayed on B from Redis, with no statement, byte for byte',
    async (route) => {
      const key = randomUUID();
      const body = { customerId: customer(route), amount: 7 };
      const first = await post('a', route, key, body);
      expect(first.answer.status).toBe(201);
      const entry = await sharedEntry(key);
      // Never longer than maxAgeMs (60 s) less the margin; the record lives 24 h.
      const ttl = await redis.pttl(entry);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(59_000);
      // Stored as the ledger stores it: the body sealed with encryptionKey.
      const stored = decodeCachedRecord(await redis.get(entry))!;
      expect(stored.status).toBe(201);
      expect(stored.body!.includes(Buffer.from(body.customerId))).toBe(false);
      expect(JSON.parse(stored.headers!)).toEqual({ encrypted: 2, kid: 'default' });
      expect(first.answer.bytes.includes(Buffer.from(body.customerId))).toBe(true);
      for (let i = 0; i < 2; i++) {
        const retry = await post('b', route, key, body);
        expect(retry.statements).toEqual([]);
        expectReplayOf(retry.answer, first.answer);
      }
      expect(await paymentCount(ds, kind, body.customerId)).toBe(1);
    },
  );

  it('the same key with another body is refused (422) on B from Redis, with no statement', async () => {
    const key = randomUUID();
    const body = { customerId: customer('mismatch'), amount: 7 };
    expect((await post('a', 'tx', key, body)).answer.status).toBe(201);
    await sharedEntry(key);
    const other = await post('b', 'tx', key, { ...body, amount: 8 });
    expect(other.statements).toEqual([]);
    expect(other.answer.status).toBe(422);
    expect(other.answer.headers.get('content-type')).toContain('application/problem+json');
    expect(await paymentCount(ds, kind, body.customerId)).toBe(1);
  });

  it('an admin eviction through any instance deletes the shared entry: the next request runs again', async () => {
    const key = randomUUID();
    const body = { customerId: customer('evict'), amount: 6 };
    expect((await post('a', 'tx', key, body)).answer.status).toBe(201);
    const entry = await sharedEntry(key);
    expect(replayed((await post('b', 'tx', key, body)).answer)).toBe('true');
    expect(
      await admins.b.evictIdempotencyKey({ tenant: '-', method: 'POST', route: '/cache/tx' }, key),
    ).toBe(true);
    expect(await redis.exists(entry)).toBe(0);
    const after = await post('b', 'tx', key, body);
    expect(after.answer.status).toBe(201);
    expect(replayed(after.answer)).toBeNull();
    expect(await paymentCount(ds, kind, body.customerId)).toBe(2);
  });

  it("an entry never outlives its record: a 1.5 s record's entry lives at most 0.5 s, and after expiry the key runs again", async () => {
    const key = randomUUID();
    const body = { customerId: customer('ttl'), amount: 2 };
    const first = await post('a', 'short', key, body);
    expect(first.answer.status).toBe(201);
    // The entry may already be gone (or never written, on a slow first execution).
    const found = (await redis.keys(`${prefix}*`)).filter((k) => k.endsWith(key));
    for (const k of found) expect(await redis.pttl(k)).toBeLessThanOrEqual(500);
    await sleep(1600);
    const after = await post('b', 'short', key, body);
    expect(after.answer.status).toBe(201);
    expect(replayed(after.answer)).toBeNull();
    expect(await paymentCount(ds, kind, body.customerId)).toBe(2);
  });

  it('a value under the key that is not an answer of ours is a miss: the ledger answers', async () => {
    const key = randomUUID();
    const body = { customerId: customer('garbage'), amount: 3 };
    const first = await post('a', 'tx', key, body);
    const entry = await sharedEntry(key);
    await redis.set(entry, 'eo1\t200\tnot-a-fingerprint\t-\t-', 'PX', 60_000);
    const retry = await post('b', 'tx', key, body);
    expect(retry.statements.length).toBeGreaterThan(0);
    expectReplayOf(retry.answer, first.answer);
    expect(await paymentCount(ds, kind, body.customerId)).toBe(1);
  });

  it.each([
    ['refuses connections', 'down'],
    ['accepts connections and never answers', 'hung'],
  ] as const)(
    'a Redis that %s: first executions and retries are answered by the ledger, once each',
    async (_label, name) => {
      const key = randomUUID();
      const body = { customerId: customer(name), amount: 4 };
      const first = await post(name, 'tx', key, body);
      expect(first.answer.status).toBe(201);
      for (const route of ['tx', 'leased']) {
        const k = route === 'tx' ? key : randomUUID();
        const b = route === 'tx' ? body : { customerId: customer(`${name}-l`), amount: 4 };
        const original = route === 'tx' ? first : await post(name, route, k, b);
        expect(original.answer.status).toBe(201);
        const retry = await post(name, route, k, b);
        expect(retry.statements.length).toBeGreaterThan(0);
        expectReplayOf(retry.answer, original.answer);
        expect(await paymentCount(ds, kind, b.customerId)).toBe(1);
      }
    },
  );
});
