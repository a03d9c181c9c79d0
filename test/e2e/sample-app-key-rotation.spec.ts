import { existsSync, readFileSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { PROBLEM_TYPES } from '../../lib';
import { createTestDatabase, openDataSource, type TestDatabase } from '../support/databases';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';
import { type Answer, paymentCount, postJson } from '../fixtures/gate/http';

const k1 = `k1:${randomBytes(32).toString('base64')}`;
const k2 = `k2:${randomBytes(32).toString('base64')}`;

/**
 * Issue 54's acceptance with the real sample app process (dist/sample-app/main.js) on SQLite:
 * under IDEMPOTENCY_ENCRYPTION_KEYS=k1 a payment's stored answer is nowhere in the database
 * file in clear; restarted with k2,k1 its retry is replayed; restarted with k2 alone it is
 * refused with a 500 problem naming k1 and nothing runs again; the admin API's re-encryption
 * job (k2,k1) then moves it to k2, and k2 alone replays it.
 */
describe('sample app: stored answers under a rotated key ring (sqlite)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let app: AppProcess | undefined;
  const key = randomUUID();
  const customerId = `rotate-${randomUUID().slice(0, 8)}`;
  const body = { amount: 98765.43, currency: 'EUR', customerId };
  let first: Answer;

  const start = async (keys: string) => {
    await app?.kill();
    app = await spawnSampleApp({ DB_URL: db.url, IDEMPOTENCY_ENCRYPTION_KEYS: keys });
    return app.url;
  };
  const retry = async (keys: string) => postJson(`${await start(keys)}/payments`, key, body);
  /** The database file's bytes, with its write-ahead log. */
  const fileBytes = () => {
    const file = db.url.slice('sqlite:'.length);
    return Buffer.concat(
      [file, `${file}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
    );
  };

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
  });

  afterAll(async () => {
    await app?.kill();
    await ds?.destroy();
    await db?.drop();
  });

  it('with k1: the payment is created and its stored answer holds no plaintext in the database file', async () => {
    first = await postJson(`${await start(k1)}/payments`, key, body);
    expect(first.status).toBe(201);
    const payment = first.json();
    expect(payment).toMatchObject({ customerId, amount: 98765.43 });
    await app!.kill();
    const bytes = fileBytes();
    // The grep reads the right bytes: the outbox event (not encrypted) holds the payment id.
    expect(bytes.includes(Buffer.from(`"paymentId":"${payment.id}"`))).toBe(true);
    // The stored answer: neither its body, nor its JSON fields, nor its Location header. (The
    // amount is not searched alone: the payments row and the outbox event hold it in clear.)
    expect(bytes.includes(first.bytes)).toBe(false);
    expect(bytes.includes(Buffer.from(`"id":"${payment.id}"`))).toBe(false);
    expect(bytes.includes(Buffer.from(`/payments/${payment.id}`))).toBe(false);
    ds = await openDataSource(db.url);
    const [row] = await ds.query(
      'SELECT response_headers FROM idempotency_records WHERE idempotency_key = ?',
      [key],
    );
    expect(JSON.parse(row.response_headers)).toEqual({ encrypted: 2, kid: 'k1' });
  });

  it('restarted with k2,k1: the retry is replayed', async () => {
    const r = await retry(`${k2},${k1}`);
    expect(r.status).toBe(201);
    expect(r.headers.get('idempotency-replayed')).toBe('true');
    expect(r.bytes.equals(first.bytes)).toBe(true);
  });

  it('restarted with k2 only: the retry is a 500 problem naming k1, and nothing runs again', async () => {
    const r = await retry(k2);
    expect(r.status).toBe(500);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(r.json()).toMatchObject({ type: PROBLEM_TYPES.storedResponseKeyUnknown, keyId: 'k1' });
    expect(await paymentCount(ds, 'sqlite', customerId)).toBe(1);
  });

  it('the admin API re-encrypts it under k2 (k2,k1); then k2 alone replays it', async () => {
    const url = await start(`${k2},${k1}`);
    const res = await fetch(`${url}/admin/idempotency/reencrypt?batchSize=100`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ rewritten: 1, unreadable: 0, done: true });
    // The admin API's look-up names the key the record is now under.
    const [{ scope }] = await ds.query(
      'SELECT scope FROM idempotency_records WHERE idempotency_key = ?',
      [key],
    );
    const view = await fetch(
      `${url}/admin/idempotency?scope=${encodeURIComponent(scope)}&key=${encodeURIComponent(key)}`,
    );
    expect(await view.json()).toMatchObject({
      encrypted: true,
      keyId: 'k2',
      responseHeaders: null,
    });
    const r = await retry(k2);
    expect(r.status).toBe(201);
    expect(r.headers.get('idempotency-replayed')).toBe('true');
    expect(r.bytes.equals(first.bytes)).toBe(true);
    expect(await paymentCount(ds, 'sqlite', customerId)).toBe(1);
  });
});
