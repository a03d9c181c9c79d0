import type { INestApplication } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  type EncryptionOptions,
  PROBLEM_TYPES,
  reencryptStoredAnswers,
  type IdempotencyModuleOptions,
} from '../../lib';
import { createDialect } from '../../lib/persistence/dialects';
import { executorFor } from '../../lib/persistence/sql-executor';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { appSetupTimeoutMs, baseUrl } from '../support/sample-app';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import { paymentCount, postJson, type Answer } from '../fixtures/gate/http';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };

/**
 * The key ring of stored answers on each database, through the gate of a real app: nothing in
 * clear at rest, rotation (k2 then k1 in the ring, then k2 alone), the re-encryption job in
 * batches with its compare-and-set, and the plaintext refusal with its migration switch. One
 * database per suite; the app is restarted with each ring, as an operator would.
 */
describe.each(databaseKinds())('stored-answer key ring on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  const tag = randomUUID().slice(0, 8);
  const customer = (name: string) => `enc-${name}-${tag}`;
  const keyOf: Record<string, string> = {};
  const bodyOf = (name: string) => ({ customerId: customer(name), amount: 4242 });
  const first: Record<string, Answer> = {};

  /** Runs `fn` against the gate fixture started with these options, then closes it. */
  async function withApp(
    options: IdempotencyModuleOptions,
    fn: (post: (name: string) => Promise<Answer>) => Promise<void>,
  ): Promise<void> {
    const app: INestApplication = await startGateFixture({
      dbUrl: db.url,
      platform: 'express',
      options,
    });
    try {
      const url = `${await baseUrl(app)}/gate/wait`;
      await fn((name) => {
        keyOf[name] ??= randomUUID();
        return postJson(url, keyOf[name], bodyOf(name));
      });
    } finally {
      await app.close();
    }
  }
  const ring = (e: EncryptionOptions): IdempotencyModuleOptions => ({ encryption: e });

  async function row(name: string): Promise<{ headers: string | null; body: Buffer | null }> {
    const [r] = await ds.query(
      `SELECT response_headers, response_body FROM idempotency_records WHERE idempotency_key = ${placeholder(kind, 0)}`,
      [keyOf[name]],
    );
    return {
      headers: r.response_headers,
      body: r.response_body ? Buffer.from(r.response_body) : null,
    };
  }
  const kidOf = async (name: string) => JSON.parse((await row(name)).headers!).kid;
  const count = (name: string) => paymentCount(ds, kind, customer(name));

  function expectReplay(r: Answer, name: string): void {
    expect(r.status).toBe(201);
    expect(r.headers.get('idempotency-replayed')).toBe('true');
    expect(r.bytes.equals(first[name].bytes)).toBe(true);
  }

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    // Written before keys were set: a plaintext stored answer.
    await withApp({}, async (post) => {
      first.plain = await post('plain');
      expect(first.plain.status).toBe(201);
    });
    ds = await openDataSource(db.url);
  }, appSetupTimeoutMs(kind));

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('with keys [k1]: stored answers carry no plaintext; a plaintext answer is refused (500), not run again', async () => {
    await withApp(ring({ keys: [k1] }), async (post) => {
      for (const name of ['a', 'b', 'c', 'd', 'e']) {
        first[name] = await post(name);
        expect(first[name].status).toBe(201);
        expect(first[name].bytes.includes(Buffer.from(customer(name)))).toBe(true);
      }
      expectReplay(await post('a'), 'a');
      const refused = await post('plain');
      expect(refused.status).toBe(500);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(refused.json().type).toBe(PROBLEM_TYPES.storedResponseNotEncrypted);
    });
    for (const name of ['a', 'b', 'c', 'd', 'e']) {
      const r = await row(name);
      expect(JSON.parse(r.headers!)).toEqual({ encrypted: 2, kid: 'k1' });
      expect(r.body!.includes(Buffer.from(customer(name)))).toBe(false);
      expect(r.body!.includes(Buffer.from('4242'))).toBe(false);
    }
    expect(await count('plain')).toBe(1);
  });

  it('with keys [k2, k1]: a k1 answer is replayed, a new one is sealed under k2', async () => {
    await withApp(ring({ keys: [k2, k1] }), async (post) => {
      expectReplay(await post('a'), 'a');
      first.f = await post('f');
      expect(first.f.status).toBe(201);
    });
    expect(await kidOf('a')).toBe('k1');
    expect(await kidOf('f')).toBe('k2');
  });

  it('with keys [k2]: the retry of a k1 answer is a 500 problem naming k1, and the handler does not run again', async () => {
    await withApp(ring({ keys: [k2] }), async (post) => {
      for (let i = 0; i < 2; i++) {
        const r = await post('a');
        expect(r.status).toBe(500);
        expect(r.json()).toMatchObject({
          type: PROBLEM_TYPES.storedResponseKeyUnknown,
          keyId: 'k1',
          retryable: false,
        });
        expect(r.json().detail).toContain('"k1"');
      }
      expectReplay(await post('f'), 'f');
    });
    expect(await count('a')).toBe(1);
  });

  it('the re-encryption job moves the k1 rows to k2 in batches, resumably, and leaves plaintext alone without the switch', async () => {
    const keys = { keys: [k2, k1] };
    const parts = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await reencryptStoredAnswers(ds, keys, {
        batchSize: 2,
        maxBatches: 1,
        after: cursor,
      });
      parts.push(r);
      cursor = r.cursor;
      if (r.done) break;
    }
    // 7 records (plain, a–f) in batches of 2: four batches, the last one short.
    expect(parts.map((p) => p.scanned)).toEqual([2, 2, 2, 1]);
    expect(parts.reduce((n, p) => n + p.rewritten, 0)).toBe(5);
    expect(parts.reduce((n, p) => n + p.current, 0)).toBe(1);
    expect(parts.reduce((n, p) => n + p.plaintextLeft, 0)).toBe(1);
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) expect(await kidOf(name)).toBe('k2');
    // A second run finds nothing to do.
    expect(await reencryptStoredAnswers(ds, keys)).toMatchObject({
      rewritten: 0,
      current: 6,
      done: true,
    });
    // Without k1 and with an unknown old key: what cannot be opened is counted and named.
    const lost = await reencryptStoredAnswers(ds, { keys: [{ id: 'k3', key: randomBytes(32) }] });
    expect(lost).toMatchObject({ rewritten: 0, unreadable: 6, missingKeyIds: ['k2'] });
  });

  it('the rewrite is a compare-and-set: a record written again since it was read is left as it is', async () => {
    const dialect = await createDialect(ds, {
      tables: {
        idempotency: 'idempotency_records',
        outbox: 'outbox_messages',
        inbox: 'inbox_messages',
      },
    });
    const exec = executorFor(ds.manager, false);
    const [target] = (await dialect.answers.page(exec, undefined, 50)).filter(
      (r) => r.key === keyOf.b,
    );
    expect(target).toBeDefined();
    // The gate writes the record again between the job's read and its rewrite.
    const again = Buffer.concat([
      target.body!.subarray(0, target.body!.length - 1),
      Buffer.from([0]),
    ]);
    await ds.query(
      `UPDATE idempotency_records SET response_body = ${placeholder(kind, 0)} WHERE id = ${placeholder(kind, 1)}`,
      [again, target.id],
    );
    expect(
      await dialect.answers.rewrite(exec, target, '{"encrypted":2,"kid":"x"}', Buffer.alloc(40)),
    ).toBe(false);
    expect((await row('b')).body!.equals(again)).toBe(true);
    // As read now, it is rewritten.
    const [now] = (await dialect.answers.page(exec, undefined, 50)).filter(
      (r) => r.key === keyOf.b,
    );
    expect(await dialect.answers.rewrite(exec, now, target.headers!, target.body!)).toBe(true);
    expect((await row('b')).body!.equals(target.body!)).toBe(true);
  });

  it('the migration switch replays plaintext answers, and the job seals them; then they replay without it', async () => {
    await withApp(ring({ keys: [k2], acceptPlaintext: true }), async (post) => {
      expectReplay(await post('plain'), 'plain');
      expectReplay(await post('a'), 'a');
    });
    const r = await reencryptStoredAnswers(ds, { keys: [k2], acceptPlaintext: true });
    expect(r).toMatchObject({ rewritten: 1, plaintextLeft: 0, done: true });
    const sealed = await row('plain');
    expect(JSON.parse(sealed.headers!)).toEqual({ encrypted: 2, kid: 'k2' });
    expect(sealed.body!.includes(Buffer.from(customer('plain')))).toBe(false);
    await withApp(ring({ keys: [k2] }), async (post) => {
      expectReplay(await post('plain'), 'plain');
      expectReplay(await post('a'), 'a');
    });
    for (const name of ['plain', 'a', 'b']) expect(await count(name)).toBe(1);
  });

  it('the job runs beside live traffic: first executions and retries meanwhile, every answer replays, nothing runs twice', async () => {
    const k3 = { id: 'k3', key: randomBytes(32) };
    const old = ['plain', 'a', 'b', 'c', 'd', 'e', 'f'];
    const fresh = ['g1', 'g2', 'g3', 'g4', 'g5', 'g6'];
    await withApp(ring({ keys: [k3, k2] }), async (post) => {
      let rewritten = 0;
      const job = (async () => {
        let cursor: string | undefined;
        for (;;) {
          const r = await reencryptStoredAnswers(
            ds,
            { keys: [k3, k2] },
            { batchSize: 1, maxBatches: 1, after: cursor },
          );
          rewritten += r.rewritten;
          expect(r.unreadable).toBe(0);
          cursor = r.cursor;
          if (r.done) return;
        }
      })();
      const traffic = Promise.all([
        ...old.map(async (name) => expectReplay(await post(name), name)),
        ...fresh.map(async (name) => {
          first[name] = await post(name);
          expect(first[name].status).toBe(201);
          expectReplay(await post(name), name);
        }),
      ]);
      await Promise.all([job, traffic]);
      expect(rewritten).toBeGreaterThanOrEqual(old.length);
      // After the job: everything under k3 (a second run may catch what was written meanwhile).
      await reencryptStoredAnswers(ds, { keys: [k3, k2] });
      for (const name of [...old, ...fresh]) {
        expect(await kidOf(name)).toBe('k3');
        expectReplay(await post(name), name);
        expect(await count(name)).toBe(1);
      }
    });
  });
});
