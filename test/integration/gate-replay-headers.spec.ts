import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { buildScope } from '../../lib/gate/request-scope';
import { NO_FINGERPRINT } from '../../lib/gate/request-fingerprint';
import { openDataSource, type TestDatabase } from '../support/databases';
import { rawRequest, requestHead } from '../support/raw-http';
import {
  databasePlatformCases,
  startAppOnDatabase,
  stopAppOnDatabase,
} from '../support/app-on-database';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import { paymentCount } from '../fixtures/gate/http';
import { plantCompletedRecord } from '../fixtures/gate/ledger';
import { ReplayHeadersController } from '../fixtures/gate/replay-headers.controller';

const cases = databasePlatformCases();

/** Names of the headers the gate adds or the connection carries: not part of the stored answer. */
const NOT_STORED = new Set([
  'idempotency-replayed',
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'x-powered-by',
]);

/**
 * Replayed header names are written as the first answer sent them (`Content-Type` from Express,
 * what Fastify writes, a name set on the raw response), and records stored before names kept
 * their case (lower-cased) still replay (issue 18, item 5).
 */
describe.each(cases)('replayed header names on %s / %s', (kind, platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startGateFixture({ dbUrl, platform, controllers: [ReplayHeadersController] }),
    ));
    ds = await openDataSource(db.url);
  });

  afterAll(() => stopAppOnDatabase({ ds, app, db }));

  const rawPost = (path: string, key: string | undefined, body: object) => {
    const bytes = Buffer.from(JSON.stringify(body));
    const headers: Array<[string, string]> = [['Content-Type', 'application/json']];
    if (key) headers.push(['Idempotency-Key', key]);
    return rawRequest(url, requestHead('POST', path, headers, bytes.length), bytes);
  };
  const storedNames = (names: string[]) => names.filter((n) => !NOT_STORED.has(n.toLowerCase()));

  it('a replay writes every stored header name byte for byte as the first answer did', async () => {
    const key = randomUUID();
    const c = `case-${randomUUID().slice(0, 8)}`;
    const first = await rawPost('/replay-headers', key, { customerId: c });
    expect(first.status).toBe(201);
    const replay = await rawPost('/replay-headers', key, { customerId: c });
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body.equals(first.body)).toBe(true);
    const names = storedNames(first.headerNames);
    // The raw response's name keeps its case on both platforms; Express also keeps its own.
    expect(names).toContain('X-Trace-Id');
    if (platform === 'express') {
      expect(names).toEqual(expect.arrayContaining(['Content-Type', 'Location']));
    }
    expect(storedNames(replay.headerNames).sort()).toEqual([...names].sort());
    for (const name of names) {
      expect(replay.headers[name.toLowerCase()]).toBe(first.headers[name.toLowerCase()]);
    }
  });

  it('a record stored before names kept their case (lower-cased names) still replays', async () => {
    const eventId = randomUUID();
    const c = `old-${randomUUID().slice(0, 8)}`;
    await plantCompletedRecord(
      ds,
      buildScope('-', '-', 'POST', '/replay-headers/webhook'),
      eventId,
      NO_FINGERPRINT,
      {
        status: 201,
        headers: JSON.stringify({
          h: [
            ['content-type', 'application/json; charset=utf-8'],
            ['location', '/payments/stored-before'],
          ],
        }),
        body: Buffer.from('{"id":"stored-before"}'),
      },
    );
    const r = await rawPost('/replay-headers/webhook', undefined, { eventId, customerId: c });
    expect(r.status).toBe(201);
    expect(r.headers['idempotency-replayed']).toBe('true');
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(r.headers['location']).toBe('/payments/stored-before');
    expect(r.headerNames).toEqual(expect.arrayContaining(['content-type', 'location']));
    expect(r.body.toString()).toBe('{"id":"stored-before"}');
    expect(await paymentCount(ds, kind, c)).toBe(0);
  });
});
