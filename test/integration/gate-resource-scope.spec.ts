import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { PROBLEM_TYPES } from '../../lib';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { baseUrl, type Platform, startSampleApp } from '../support/sample-app';

const platforms: Platform[] = ['express', 'fastify'];
const modes = ['transactional', 'leased'] as const;
const cases = databaseKinds().flatMap((db) =>
  platforms.flatMap((p) => modes.map((m) => [db, p, m] as const)),
);

/**
 * The gate keys on the resource, not on the route template (issue #11): the same
 * Idempotency-Key sent to PUT/PATCH /customers/A and then to /customers/B is two requests.
 * Before the fix, B got A's stored answer (201 with Location /customers/A, Idempotency-Replayed)
 * and was never created, and a PATCH of B was silently lost.
 */
describe.each(cases)(
  'The key belongs to the resource on %s / %s / %s mode',
  (kind, platform, mode) => {
    let db: TestDatabase;
    let app: INestApplication;
    let url: string;

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      app = await startSampleApp(db.url, platform, { IDEMPOTENCY_MODE: mode });
      url = await baseUrl(app);
    });

    afterAll(async () => {
      await app?.close();
      await db?.drop();
    });

    const id = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;
    const send = (
      method: 'PUT' | 'PATCH',
      path: string,
      body: unknown,
      headers: Record<string, string>,
    ) =>
      fetch(`${url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const get = async (customer: string) => {
      const r = await fetch(`${url}/customers/${encodeURIComponent(customer)}`);
      return {
        status: r.status,
        etag: r.headers.get('etag'),
        body: r.status === 200 ? await r.json() : undefined,
      };
    };

    it('PUT: the same key and body on another customer creates that customer', async () => {
      const key = randomUUID();
      const a = id('A');
      const b = id('B');
      const body = { name: 'Ada', email: 'ada@example.com' };
      const first = await send('PUT', `/customers/${a}`, body, {
        'idempotency-key': key,
        'if-none-match': '*',
      });
      expect(first.status).toBe(201);
      expect(first.headers.get('location')).toBe(`/customers/${a}`);

      const second = await send('PUT', `/customers/${b}`, body, {
        'idempotency-key': key,
        'if-none-match': '*',
      });
      expect(second.status).toBe(201);
      expect(second.headers.get('idempotency-replayed')).toBeNull();
      expect(second.headers.get('location')).toBe(`/customers/${b}`);
      expect(await second.json()).toMatchObject({ id: b, name: 'Ada' });
      expect((await get(b)).status).toBe(200);

      // A retry of each is still a replay of its own answer.
      const retryB = await send('PUT', `/customers/${b}`, body, {
        'idempotency-key': key,
        'if-none-match': '*',
      });
      expect(retryB.status).toBe(201);
      expect(retryB.headers.get('idempotency-replayed')).toBe('true');
      expect(retryB.headers.get('location')).toBe(`/customers/${b}`);
      const retryA = await send('PUT', `/customers/${a}`, body, {
        'idempotency-key': key,
        'if-none-match': '*',
      });
      expect(retryA.headers.get('idempotency-replayed')).toBe('true');
      expect(retryA.headers.get('location')).toBe(`/customers/${a}`);
    });

    it('PATCH: the same key, body and If-Match on another customer updates that customer (no lost update)', async () => {
      const a = id('A');
      const b = id('B');
      for (const c of [a, b]) {
        const created = await send(
          'PUT',
          `/customers/${c}`,
          { name: 'Old', email: 'old@example.com' },
          { 'if-none-match': '*' },
        );
        expect(created.status).toBe(201);
      }
      const etagA = (await get(a)).etag!;
      const etagB = (await get(b)).etag!;
      const key = randomUUID();
      const patchA = await send(
        'PATCH',
        `/customers/${a}`,
        { name: 'New' },
        {
          'idempotency-key': key,
          'if-match': etagA,
        },
      );
      expect(patchA.status).toBe(200);
      const patchB = await send(
        'PATCH',
        `/customers/${b}`,
        { name: 'New' },
        {
          'idempotency-key': key,
          'if-match': etagB,
        },
      );
      expect(patchB.status).toBe(200);
      expect(patchB.headers.get('idempotency-replayed')).toBeNull();
      expect(await patchB.json()).toMatchObject({ id: b, name: 'New' });
      expect((await get(b)).body).toMatchObject({ id: b, name: 'New' });
      expect((await get(a)).body).toMatchObject({ id: a, name: 'New' });
    });

    it('the path is normalized: a percent-encoded unreserved character names the same resource', async () => {
      const key = randomUUID();
      const c = id('N');
      const body = { name: 'Norm', email: 'norm@example.com' };
      const first = await send('PUT', `/customers/${c}`, body, {
        'idempotency-key': key,
        'if-none-match': '*',
      });
      expect(first.status).toBe(201);
      // `N-…` with its first letter percent-encoded (%4E = "N") is the same customer.
      const encoded = `%4E${c.slice(1)}`;
      const retry = await send('PUT', `/customers/${encoded}`, body, {
        'idempotency-key': key,
        'if-none-match': '*',
      });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotency-replayed')).toBe('true');
    });

    it('a retry to another resource with another body is a new request, not a 422', async () => {
      const key = randomUUID();
      const a = id('A');
      const b = id('B');
      const r1 = await send(
        'PUT',
        `/customers/${a}`,
        { name: 'One', email: 'one@example.com' },
        {
          'idempotency-key': key,
          'if-none-match': '*',
        },
      );
      expect(r1.status).toBe(201);
      const r2 = await send(
        'PUT',
        `/customers/${b}`,
        { name: 'Two', email: 'two@example.com' },
        {
          'idempotency-key': key,
          'if-none-match': '*',
        },
      );
      expect(r2.status).toBe(201);
      // …while the same resource with another body is still 422.
      const r3 = await send(
        'PUT',
        `/customers/${a}`,
        { name: 'Three', email: 'three@example.com' },
        {
          'idempotency-key': key,
          'if-none-match': '*',
        },
      );
      expect(r3.status).toBe(422);
      expect(((await r3.json()) as any).type).toBe(PROBLEM_TYPES.mismatch);
    });
  },
);
