import type { INestApplication, LoggerService } from '@nestjs/common';
import { startAppOnDatabase, stopAppOnDatabase } from '../support/app-on-database';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { rawRequest, requestHead } from '../support/raw-http';
import { baseUrl, type Platform } from '../support/sample-app';
import { startUserApp } from '../fixtures/ops/user-app.fixture';

/**
 * problem+json without the app registering anything: IdempotencyModule installs
 * ProblemDetailsFilter as the filter of last resort. A user's app (no `useGlobalFilters(new
 * ProblemDetailsFilter())`) answers a 413 of its body parser, an unguarded 500 and its own
 * HttpExceptions as problem+json, while its own filters (an APP_FILTER in the root module, one
 * given to app.useGlobalFilters()) still answer their own exceptions. With
 * `problemDetailsFilter: false` the app's default comes back and the boot warns, naming the fix.
 */
const kind = databaseKinds()[0];
const platforms: Platform[] = ['express', 'fastify'];

const json = (body: Buffer) => JSON.parse(body.toString('utf8'));

describe.each(platforms)('problem+json by default on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startUserApp({ dbUrl, platform }),
    ));
  }, 60_000);
  afterAll(() => stopAppOnDatabase({ app, db }));

  it('a body over the body parser limit is a 413 problem', async () => {
    // Express' body-parser: 100 kB; Fastify: 1 MiB.
    const body = Buffer.from(JSON.stringify({ blob: 'x'.repeat(2 * 1024 * 1024) }));
    const res = await rawRequest(
      url,
      requestHead('POST', '/user-app/echo', [['Content-Type', 'application/json']], body.length),
      body,
    );
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(json(res.body)).toMatchObject({ status: 413, instance: '/user-app/echo' });
  });

  it('an unguarded bug is a 500 problem without internals', async () => {
    const res = await fetch(`${url}/user-app/boom`);
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = await res.text();
    expect(JSON.parse(body)).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An unexpected error occurred.',
      instance: '/user-app/boom',
      retryable: false,
    });
    expect(body).not.toContain('kaboom');
  });

  it('an error after the body started ends the response as sent (too late for a problem)', async () => {
    const res = await fetch(`${url}/user-app/half-sent`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('partial');
    expect((await fetch(`${url}/user-app/boom`)).status).toBe(500);
  });

  it("the app's HttpException is a problem with its status and message", async () => {
    const res = await fetch(`${url}/user-app/missing`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({
      title: 'Not Found',
      status: 404,
      detail: 'no such thing',
    });
  });

  it("the app's own filters keep their exceptions (APP_FILTER and useGlobalFilters)", async () => {
    const teapot = await fetch(`${url}/user-app/teapot`);
    expect([teapot.status, await teapot.text()]).toEqual([418, 'teapot filter']);
    const own = await fetch(`${url}/user-app/own-global`);
    expect([own.status, await own.text()]).toEqual([409, 'own global filter']);
  });

  it('a guarded route still answers and replays as before', async () => {
    const headers = { 'content-type': 'application/json', 'idempotency-key': `k-${platform}` };
    const first = await fetch(`${url}/user-app/guarded`, {
      method: 'POST',
      headers,
      body: '{"a":1}',
    });
    expect(first.status).toBe(201);
    const again = await fetch(`${url}/user-app/guarded`, {
      method: 'POST',
      headers,
      body: '{"a":1}',
    });
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    const mismatch = await fetch(`${url}/user-app/guarded`, {
      method: 'POST',
      headers,
      body: '{"a":2}',
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});

describe.each(platforms)('a refused stream on a guarded route, %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  const errors: unknown[] = [];
  const logger: LoggerService = {
    log: () => undefined,
    warn: () => undefined,
    error: (m: unknown) => void errors.push(m),
  };

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await startUserApp({ dbUrl: db.url, platform, logger });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it.each(['file', 'generator'])(
    'a returned %s: 500 to the client and an error line naming the route and the fix',
    async (route) => {
      errors.length = 0;
      const res = await fetch(`${await baseUrl(app)}/user-app/${route}`, {
        method: 'POST',
        headers: { 'idempotency-key': `${route}-${platform}` },
      });
      expect(res.status).toBe(500);
      expect(errors).toEqual([
        expect.objectContaining({
          event: 'idempotency.response-not-snapshottable',
          method: 'POST',
          route: `/user-app/${route}`,
          answer: 'a stream or file',
          fix: expect.stringContaining('read the stream into a Buffer'),
        }),
      ]);
    },
  );
});

describe('problemDetailsFilter: false (express)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  const warnings: string[] = [];
  const logger: LoggerService = {
    log: () => undefined,
    error: () => undefined,
    warn: (m: unknown) => void warnings.push(String(m)),
  };

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await startUserApp({
      dbUrl: db.url,
      platform: 'express',
      options: { problemDetailsFilter: false },
      logger,
    });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it("warns at boot naming the fix, and leaves errors to the app's default", async () => {
    expect(warnings.filter((w) => w.includes('problemDetailsFilter'))).toEqual([
      expect.stringContaining('app.useGlobalFilters(new ProblemDetailsFilter())'),
    ]);
    const res = await fetch(`${await baseUrl(app)}/user-app/boom`);
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ statusCode: 500, message: 'Internal server error' });
  });
});
