import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { type AppProcess, appSetupTimeoutMs, spawnSampleApp } from '../support/sample-app';
import { paymentCount, postJson } from '../fixtures/gate/http';

/**
 * The sample app's REPLAY_CACHE_REDIS_URL, as real OS processes (dist/sample-app/main.js) on one
 * database and one Redis: a first execution on one instance writes its answer to Redis after its
 * commit, and another instance answers the retry from there; a Redis that cannot be reached
 * fails the boot with a message naming the variable.
 */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const serverKinds = databaseKinds().filter((k) => k !== 'sqlite');
const body = (customerId: string) => ({ amount: 12.5, currency: 'EUR', customerId });

describe.each(serverKinds)('sample app with REPLAY_CACHE_REDIS_URL on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let apps: AppProcess[] = [];
  const prefix = `eo-sample-test:${randomUUID().slice(0, 8)}:`;
  const redis = createClient({ url: REDIS_URL });

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    await redis.connect();
    const env = {
      DB_URL: db.url,
      REPLAY_CACHE_REDIS_URL: REDIS_URL,
      REPLAY_CACHE_REDIS_PREFIX: prefix,
    };
    // The first process runs the migrations; the second starts on the migrated database.
    apps.push(await spawnSampleApp(env));
    apps.push(await spawnSampleApp(env));
    ds = await openDataSource(db.url);
  }, appSetupTimeoutMs(kind));

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.kill()));
    apps = [];
    for (const k of await redis.keys(`${prefix}*`)) await redis.del(k);
    await redis.close();
    await ds?.destroy();
    await db?.drop();
  });

  it('a retry sent to another instance is answered from Redis, byte for byte, once the first commit is done', async () => {
    const [a, b] = apps;
    const customerId = `redis-${randomUUID().slice(0, 8)}`;
    const key = randomUUID();
    const first = await postJson(`${a.url}/payments`, key, body(customerId));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    // Written after the commit, from the request's own process: wait for it (5 s at most).
    let stored: string[] = [];
    for (let i = 0; i < 50 && stored.length === 0; i++) {
      stored = await redis.keys(`${prefix}*`);
      if (stored.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(stored).toHaveLength(1);
    // The ledger's record is removed behind the library's back: only Redis can answer now, and
    // without it instance b would run the payment a second time.
    await ds.query(
      `DELETE FROM idempotency_records WHERE idempotency_key = ${placeholder(kind, 0)}`,
      [key],
    );
    const retry = await postJson(`${b.url}/payments`, key, body(customerId));
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.bytes.equals(first.bytes)).toBe(true);
    expect(await paymentCount(ds, kind, customerId)).toBe(1);
    // Another payload under the same key: 422 from the shared record, still nothing run.
    const other = await postJson(`${b.url}/payments`, key, body(`${customerId}-x`));
    expect(other.status).toBe(422);
    expect(await paymentCount(ds, kind, `${customerId}-x`)).toBe(0);
  });
});

describe('sample app with an unreachable REPLAY_CACHE_REDIS_URL', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('refuses to start, naming the variable and the fix', async () => {
    await expect(
      spawnSampleApp({ DB_URL: db.url, REPLAY_CACHE_REDIS_URL: 'redis://127.0.0.1:1' }),
    ).rejects.toThrow(
      /REPLAY_CACHE_REDIS_URL: cannot connect to redis:\/\/127\.0\.0\.1:1.*unset REPLAY_CACHE_REDIS_URL/s,
    );
  }, 60_000);
});
