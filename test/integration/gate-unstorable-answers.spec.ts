import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { PROBLEM_TYPES } from '../../lib';
import { openDataSource, type TestDatabase } from '../support/databases';
import { rawRequest, requestHead } from '../support/raw-http';
import {
  databasePlatformCases,
  PLATFORMS,
  startAppOnDatabase,
  stopAppOnDatabase,
} from '../support/app-on-database';
import type { Platform } from '../support/sample-app';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import { ledgerRows, paymentCount, postJson } from '../fixtures/gate/http';
import { UnstorableAnswersController } from '../fixtures/gate/unstorable-answers.controller';

const platforms = PLATFORMS;
const cases = databasePlatformCases();

/** Every route of the fixture whose answer cannot be stored exactly, and on which platforms. */
const UNSTORABLE: Array<[string, string, Platform[]]> = [
  ['written through res AND returned', 'written-and-returned', platforms],
  ['written through res AND returned (leased)', 'written-and-returned-leased', platforms],
  ['written through res AND thrown', 'written-and-thrown', platforms],
  ['stream.pipe(res)', 'piped', platforms],
  ['a readable-stream Readable piped into res', 'piped-userland', platforms],
  ['a file stream piped into res', 'piped-file', platforms],
  ["Express's res.sendFile()", 'send-file', ['express']],
  ['res.write() before the answer', 'written-in-parts', platforms],
  ['a returned node:stream Readable', 'node-readable', platforms],
  ['a returned readable-stream Readable', 'userland-readable', platforms],
  ['a returned web ReadableStream', 'web-stream', platforms],
  ['a returned async iterable', 'async-iterable', platforms],
  ['a returned StreamableFile', 'streamable-file', platforms],
];

/**
 * Every answer the gate cannot store exactly is refused loudly (issue 18, item 7): a 500
 * problem+json `response-not-snapshottable` with a well-framed body, nothing committed, the key
 * free (a retry runs again), on every database and both platforms; and the passthrough answers
 * it can store exactly are stored and replayed byte for byte.
 */
describe.each(cases)('answers the gate cannot store, on %s / %s', (kind, platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startGateFixture({ dbUrl, platform, controllers: [UnstorableAnswersController] }),
    ));
    ds = await openDataSource(db.url);
  });

  afterAll(() => stopAppOnDatabase({ ds, app, db }));

  const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

  /** POSTs over a raw socket: the status line, headers and body exactly as framed. */
  const rawPost = (path: string, key: string, body: object) => {
    const bytes = Buffer.from(JSON.stringify(body));
    return rawRequest(
      url,
      requestHead(
        'POST',
        path,
        [
          ['Content-Type', 'application/json'],
          ['Idempotency-Key', key],
        ],
        bytes.length,
      ),
      bytes,
    );
  };

  const shapes = UNSTORABLE.filter(([, , on]) => on.includes(platform));
  it.each(shapes)(
    '%s: 500 response-not-snapshottable, well framed, nothing committed, the key free',
    async (_shape, route) => {
      const key = randomUUID();
      const c = customer(route);
      const r = await rawPost(`/unstorable/${route}`, key, { customerId: c });
      expect(r.status).toBe(500);
      expect(r.headers['content-type']).toContain('application/problem+json');
      // One answer, framed by its own length: never a body longer or shorter than announced.
      expect(r.headers['transfer-encoding']).toBeUndefined();
      expect(Number(r.headers['content-length'])).toBe(r.body.length);
      const problem = JSON.parse(r.body.toString('utf8'));
      expect(problem).toMatchObject({ type: PROBLEM_TYPES.notSnapshottable, status: 500 });
      expect(await paymentCount(ds, kind, c)).toBe(0);
      expect(await ledgerRows(ds, kind, key)).toHaveLength(0);
      // The key stays free: a retry runs the handler again (and is refused again).
      const again = await postJson(`${url}/unstorable/${route}`, key, { customerId: c });
      expect(again.status).toBe(500);
      expect(again.json().type).toBe(PROBLEM_TYPES.notSnapshottable);
      expect(again.headers.get('idempotency-replayed')).toBeNull();
      expect(await paymentCount(ds, kind, c)).toBe(0);
      expect(await ledgerRows(ds, kind, key)).toHaveLength(0);
    },
  );

  it.each([
    ['written through res, nothing returned', 'written-only', 201],
    ['written through res, res itself returned', 'written-and-res-returned', 200],
  ])(
    '%s: stored and replayed byte for byte, framed as without the gate',
    async (_shape, route, status) => {
      const key = randomUUID();
      const c = customer(route);
      const first = await rawPost(`/unstorable/${route}`, key, { customerId: c });
      expect(first.status).toBe(status);
      expect(Number(first.headers['content-length'])).toBe(first.body.length);
      const id = JSON.parse(first.body.toString('utf8')).id;
      expect(typeof id).toBe('string');
      const replay = await rawPost(`/unstorable/${route}`, key, { customerId: c });
      expect(replay.status).toBe(status);
      expect(replay.headers['idempotency-replayed']).toBe('true');
      expect(replay.body.equals(first.body)).toBe(true);
      expect(await paymentCount(ds, kind, c)).toBe(1);
    },
  );
});
