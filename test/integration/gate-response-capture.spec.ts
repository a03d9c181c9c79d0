import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { baseUrl } from '../support/sample-app';
import { createGateFixture } from '../fixtures/gate/gate-fixture.module';
import { ReplayCacheController } from '../fixtures/gate/replay-cache.controller';
import { postJson } from '../fixtures/gate/http';

/**
 * How the gate holds back a first execution's answer until its transaction commits, on Express,
 * when a middleware already wrapped the response's methods on the object itself (as compression
 * and on-headers do): the capture wraps those in turn, so that the middleware sees the one answer
 * that is sent, once, after the commit, and the response keeps its prototype; and when none did,
 * the capture adds no property to the response at all (it swaps Express's per-request prototype
 * for a capturing one and back: each property added to such a response costs V8 a hidden class of
 * its own). Platform logic: one database (SQLite) is enough.
 */
describe('Response capture on Express (SQLite)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let url = '';
  /** What the in-place wrapper saw, by customer id; and whether each response kept its prototype. */
  const wrapped = new Map<string, { heads: number[]; endBytes: number }>();
  const after = new Map<string, { prototypeKept: boolean; ownMembers: string[] }>();
  /** What a capture replaces, were it put on the response object itself. */
  const capturedMembers = ['writeHead', 'write', 'end', 'writableEnded', 'sendFile', 'download'];

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    app = await createGateFixture({
      dbUrl: db.url,
      platform: 'express',
      controllers: [ReplayCacheController],
      options: { replayCache: false },
    });
    app.use((req: any, res: ServerResponse, next: () => void) => {
      const id = String(req.headers['x-probe'] ?? '');
      const patch = req.headers['x-wrap-in-place'] === '1';
      const proto = Object.getPrototypeOf(res);
      if (patch) {
        // What on-headers / compression do: own properties wrapping the prototype's methods.
        const seen = { heads: [] as number[], endBytes: 0 };
        wrapped.set(id, seen);
        const writeHead = res.writeHead;
        const end = res.end;
        res.writeHead = function (this: ServerResponse, status: number, ...rest: any[]) {
          seen.heads.push(status);
          return (writeHead as any).call(this, status, ...rest);
        } as any;
        res.end = function (this: ServerResponse, chunk?: any, ...rest: any[]) {
          if (chunk && typeof chunk !== 'function') seen.endBytes += Buffer.byteLength(chunk);
          return (end as any).call(this, chunk, ...rest);
        } as any;
      }
      res.on('finish', () =>
        after.set(id, {
          prototypeKept: Object.getPrototypeOf(res) === proto,
          ownMembers: capturedMembers.filter((name) => Object.hasOwn(res, name)),
        }),
      );
      next();
    });
    await app.init();
    await app.listen(0, '127.0.0.1');
    url = `${await baseUrl(app)}/cache`;
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it.each(['tx', 'leased'])(
    '%s: methods a middleware wrapped on the response itself are captured in place; it sees the one answer sent',
    async (route) => {
      const id = `own-${route}-${randomUUID().slice(0, 8)}`;
      const key = randomUUID();
      const body = { customerId: id, amount: 6 };
      const first = await postJson(`${url}/${route}`, key, body, {
        'x-probe': id,
        'x-wrap-in-place': '1',
      });
      expect(first.status).toBe(201);
      expect(first.headers.get('idempotency-replayed')).toBeNull();
      // The middleware's wrappers ran once, for the answer that went out (not for the capture).
      expect(wrapped.get(id)).toEqual({ heads: [201], endBytes: first.bytes.length });
      expect(after.get(id)?.prototypeKept).toBe(true);
      const retry = await postJson(`${url}/${route}`, key, body, {
        'x-probe': `${id}-r`,
        'x-wrap-in-place': '1',
      });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotency-replayed')).toBe('true');
      expect(retry.bytes.equals(first.bytes)).toBe(true);
      expect(wrapped.get(`${id}-r`)!.heads).toEqual([201]);
    },
  );

  it.each(['tx', 'leased'])(
    '%s: with no method wrapped in place, nothing is added to the response; its prototype is back when it is sent',
    async (route) => {
      const id = `proto-${route}-${randomUUID().slice(0, 8)}`;
      const key = randomUUID();
      const body = { customerId: id, amount: 7 };
      const first = await postJson(`${url}/${route}`, key, body, { 'x-probe': id });
      expect(first.status).toBe(201);
      expect(first.headers.get('idempotency-replayed')).toBeNull();
      expect(JSON.parse(first.bytes.toString('utf8'))).toMatchObject({ customerId: id });
      expect(after.get(id)).toEqual({ prototypeKept: true, ownMembers: [] });
      const retry = await postJson(`${url}/${route}`, key, body, { 'x-probe': `${id}-r` });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotency-replayed')).toBe('true');
      expect(retry.bytes.equals(first.bytes)).toBe(true);
    },
  );
});
