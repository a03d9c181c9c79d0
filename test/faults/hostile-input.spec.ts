import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { rawRequest, requestHead } from '../support/raw-http';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';

/**
 * Hostile input against the real sample app process: whatever arrives, the answer is never a
 * 5xx and a rejected request never leaves a record in the ledger.
 */
const kinds = databaseKinds().filter((k) => k === 'sqlite' || k === 'postgres' || k === 'mssql');
const RUNS = Number(process.env.FAULT_PROPERTY_RUNS ?? 60);

const VISIBLE = /^[\x21-\x7e]+$/;

/** Independent oracle of the key grammar (bare or RFC 8941 sf-string), after OWS trimming. */
function expectedKey(value: Buffer): string | undefined {
  const s = value.toString('latin1').replace(/^[ \t]+|[ \t]+$/g, '');
  let key = s;
  if (s.startsWith('"')) {
    if (!s.endsWith('"') || s.length < 2) return undefined;
    const inner = s.slice(1, -1);
    let out = '';
    for (let i = 0; i < inner.length; i++) {
      if (inner[i] === '\\') {
        if (inner[i + 1] !== '"' && inner[i + 1] !== '\\') return undefined;
        out += inner[++i];
      } else if (inner[i] === '"') return undefined;
      else out += inner[i];
    }
    key = out;
  }
  return key.length >= 1 && key.length <= 255 && VISIBLE.test(key) ? key : undefined;
}

const cases = kinds.flatMap((k) => (['express', 'fastify'] as const).map((p) => [k, p] as const));

describe.each(cases)('hostile input on %s / %s (real process)', (kind, platform) => {
  let db: TestDatabase;
  let app: AppProcess;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await spawnSampleApp({ DB_URL: db.url, HTTP_PLATFORM: platform });
    ds = await openDataSource(db.url);
  }, 120_000);

  afterAll(async () => {
    await ds?.destroy();
    await app?.kill();
    await db?.drop();
  });

  const records = async () =>
    Number((await ds.query('SELECT COUNT(*) AS n FROM idempotency_records'))[0].n);
  const payments = async () => Number((await ds.query('SELECT COUNT(*) AS n FROM payments'))[0].n);

  const post = (headers: Array<[string, string | Buffer]>, body: Buffer) =>
    rawRequest(app.url, requestHead('POST', '/payments', headers, body.length), body);

  const validBody = (customerId = 'hostile') =>
    Buffer.from(JSON.stringify({ amount: 1, currency: 'USD', customerId }));

  it('keys of every length and byte class, in both header forms: 201 exactly when the key is valid, else 400, never 5xx', async () => {
    const headerByte = fc.integer({ min: 0x20, max: 0xff }).filter((b) => b !== 0x7f);
    const bareKey = fc
      .uint8Array({ minLength: 0, maxLength: 300 })
      .map((a) => Buffer.from(Array.from(a, (b) => (b < 0x20 || b === 0x7f ? 0x41 : b))));
    const anyBytes = fc
      .array(headerByte, { minLength: 0, maxLength: 280 })
      .map((a) => Buffer.from(a));
    const quoted = fc
      .string({ minLength: 0, maxLength: 260 })
      .map((s) => Buffer.from(`"${s.replace(/[\\"]/g, (c) => '\\' + c)}"`, 'latin1'));
    const visible = fc.stringMatching(/^[\x21-\x7e]{1,255}$/).map((s) => Buffer.from(s, 'latin1'));
    await fc.assert(
      fc.asyncProperty(fc.oneof(bareKey, anyBytes, quoted, visible), async (keyBytes) => {
        const before = await records();
        const salted =
          expectedKey(keyBytes) !== undefined
            ? Buffer.concat([keyBytes.subarray(0, 0), keyBytes])
            : keyBytes;
        const r = await post(
          [
            ['Content-Type', 'application/json'],
            ['Idempotency-Key', salted],
          ],
          validBody(`k-${randomUUID()}`),
        );
        expect(r.status).toBeLessThan(500);
        const key = expectedKey(salted);
        if (key === undefined) {
          expect(r.status).toBe(400);
          expect(await records()).toBe(before);
        } else {
          // A valid key: created, or (the generator repeated a key) 422 for the other customerId.
          expect([201, 422]).toContain(r.status);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('a repeated Idempotency-Key header is a 400 and stores nothing', async () => {
    const before = await records();
    const r = await post(
      [
        ['Content-Type', 'application/json'],
        ['Idempotency-Key', 'dup-a'],
        ['Idempotency-Key', 'dup-b'],
      ],
      validBody(),
    );
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toContain('application/problem+json');
    expect(await records()).toBe(before);
  });

  it('arbitrary JSON values as bodies: never 5xx, and only accepted payments are recorded', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), async (value) => {
        const beforeRecords = await records();
        const beforePayments = await payments();
        const r = await post(
          [
            ['Content-Type', 'application/json'],
            ['Idempotency-Key', randomUUID()],
          ],
          Buffer.from(JSON.stringify(value)),
        );
        expect(r.status).toBeLessThan(500);
        if (r.status === 201) {
          expect(await payments()).toBe(beforePayments + 1);
        } else {
          expect(r.status).toBe(400);
          expect(await records()).toBe(beforeRecords);
          expect(await payments()).toBe(beforePayments);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it.each([
    ['nested 300 deep', Buffer.from('{"a":'.repeat(300) + '1' + '}'.repeat(300))],
    ['nested 20,000 deep', Buffer.from('['.repeat(20_000) + ']'.repeat(20_000))],
    [
      'duplicate member names',
      Buffer.from('{"amount":1,"amount":2,"currency":"USD","customerId":"dup"}'),
    ],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])],
    ['truncated JSON', Buffer.from('{"amount": 1, "currency": "US')],
    [
      'huge string member',
      Buffer.from(JSON.stringify({ amount: 1, currency: 'USD', customerId: 'x'.repeat(90_000) })),
    ],
    [
      'over the size limit',
      Buffer.from(
        JSON.stringify({ amount: 1, currency: 'USD', customerId: 'c', pad: 'x'.repeat(2_000_000) }),
      ),
    ],
  ])('%s: never 5xx, problem+json, and a rejection stores nothing', async (_label, body) => {
    const beforeRecords = await records();
    const r = await post(
      [
        ['Content-Type', 'application/json'],
        ['Idempotency-Key', randomUUID()],
      ],
      body,
    );
    expect(r.status).toBeLessThan(500);
    if (r.status !== 201) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.headers['content-type']).toContain('application/problem+json');
      expect(await records()).toBe(beforeRecords);
    }
  });

  it.each([
    ['text/plain', 'amount=1'],
    ['application/x-www-form-urlencoded', 'amount=1&currency=USD&customerId=form'],
    ['application/xml', '<payment amount="1"/>'],
    ['application/octet-stream', '\u0000\u0001\u0002'],
  ])('content type %s: never 5xx', async (type, text) => {
    const r = await post(
      [
        ['Content-Type', type],
        ['Idempotency-Key', randomUUID()],
      ],
      Buffer.from(text, 'latin1'),
    );
    expect(r.status).toBeLessThan(500);
  });
});
