import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { openDataSource, placeholder, type TestDatabase } from '../support/databases';
import {
  databasePlatformCases,
  startAppOnDatabase,
  stopAppOnDatabase,
} from '../support/app-on-database';
import { baseUrl, startSampleApp } from '../support/sample-app';

const cases = databasePlatformCases();

/** A strong, quoted ETag: digits for a counter, 16 hex digits for a SQL Server rowversion. */
const STRONG_ETAG = /^"([0-9]{1,15}|[0-9a-f]{16})"$/;

describe.each(cases)('Conditional updates (ETag / If-Match) on %s / %s', (kind, platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) => startSampleApp(dbUrl, platform)));
    ds = await openDataSource(db.url);
  });

  afterAll(() => stopAppOnDatabase({ ds, app, db }));

  const newId = () => `c-${randomUUID()}`;
  const customer = (over: object = {}) => ({
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    ...over,
  });

  const send = (
    method: string,
    id: string,
    body: unknown,
    headers: Record<string, string> = {},
    base = url,
  ) =>
    fetch(`${base}/customers/${id}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  const put = (id: string, body: unknown, headers: Record<string, string> = {}, base = url) =>
    send('PUT', id, body, headers, base);
  const get = (id: string, headers: Record<string, string> = {}, base = url) =>
    fetch(`${base}/customers/${id}`, { headers });

  /** Creates a customer with If-None-Match: * and returns its ETag. */
  const create = async (id: string, body = customer()) => {
    const r = await put(id, body, { 'if-none-match': '*' });
    expect(r.status).toBe(201);
    return r.headers.get('etag')!;
  };

  /** The row as stored, read directly from the database. */
  const row = async (id: string): Promise<{ name: string; email: string } | undefined> => {
    const rows = await ds.query(
      `SELECT name, email FROM customers WHERE id = ${placeholder(kind, 0)}`,
      [id],
    );
    return rows[0] ? { name: rows[0].name, email: rows[0].email } : undefined;
  };

  const expectProblem = async (r: Response, status: number, type: RegExp) => {
    expect(r.status).toBe(status);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    const p = (await r.json()) as any;
    expect(p.status).toBe(status);
    expect(p.type).toMatch(type);
    expect(typeof p.detail).toBe('string');
    return p;
  };

  it('creates with If-None-Match: * (201, Location, strong ETag); a second create gets 412 and the row is unchanged', async () => {
    const id = newId();
    const first = await put(id, customer(), { 'if-none-match': '*' });
    expect(first.status).toBe(201);
    expect(first.headers.get('etag')).toMatch(STRONG_ETAG);
    // SQL Server: the server's rowversion (8 bytes, 16 hex digits); elsewhere the integer counter, 1 on create.
    expect(first.headers.get('etag')).toMatch(kind === 'mssql' ? /^"[0-9a-f]{16}"$/ : /^"1"$/);
    expect(first.headers.get('location')).toBe(`/customers/${id}`);
    expect(await first.json()).toEqual({ id, ...customer() });

    const second = await put(id, customer({ name: 'Someone Else' }), { 'if-none-match': '*' });
    await expectProblem(second, 412, /precondition-failed/);
    expect(second.headers.get('etag')).toBeNull();
    expect(await row(id)).toEqual(customer());
  });

  it('the ETag is the stored version column: a rowversion on SQL Server, an integer counter elsewhere', async () => {
    const id = newId();
    const etag = await create(id);
    const [stored] = await ds.query(
      `SELECT version FROM customers WHERE id = ${placeholder(kind, 0)}`,
      [id],
    );
    if (kind === 'mssql') {
      expect(Buffer.isBuffer(stored.version)).toBe(true);
      expect(etag).toBe(`"${stored.version.toString('hex')}"`);
      const [type] = await ds.query(
        `SELECT TYPE_NAME(system_type_id) AS t FROM sys.columns WHERE object_id = OBJECT_ID('customers') AND name = 'version'`,
      );
      expect(type.t).toBe('timestamp');
    } else {
      expect(etag).toBe(`"${Number(stored.version)}"`);
    }
  });

  it('GET answers with the ETag of the stored version, and that ETag round-trips into If-Match', async () => {
    const id = newId();
    const created = await create(id);
    const read = await get(id);
    expect(read.status).toBe(200);
    expect(read.headers.get('etag')).toBe(created);
    expect(await read.json()).toEqual({ id, ...customer() });

    const updated = await put(id, customer({ name: 'Ada King' }), {
      'if-match': read.headers.get('etag')!,
    });
    expect(updated.status).toBe(200);
    const next = updated.headers.get('etag')!;
    expect(next).toMatch(STRONG_ETAG);
    expect(next).not.toBe(created);
    expect(await updated.json()).toEqual({ id, ...customer({ name: 'Ada King' }) });

    const again = await get(id);
    expect(again.headers.get('etag')).toBe(next);
    expect(await again.json()).toEqual({ id, ...customer({ name: 'Ada King' }) });
  });

  it('a stale If-Match gets 412 problem+json and nothing is written', async () => {
    const id = newId();
    const stale = await create(id);
    const fresh = await put(id, customer({ name: 'Second' }), { 'if-match': stale });
    expect(fresh.status).toBe(200);

    const lost = await put(id, customer({ name: 'Lost Update', email: 'lost@example.com' }), {
      'if-match': stale,
    });
    await expectProblem(lost, 412, /precondition-failed/);
    expect(await row(id)).toEqual(customer({ name: 'Second' }));
    expect((await get(id)).headers.get('etag')).toBe(fresh.headers.get('etag'));
  });

  it('two concurrent PUTs with the same ETag: exactly one 200 and one 412, the winner is what is stored', async () => {
    for (let round = 0; round < 5; round++) {
      const id = newId();
      const etag = await create(id);
      const [a, b] = await Promise.all([
        put(id, customer({ name: `A${round}` }), { 'if-match': etag }),
        put(id, customer({ name: `B${round}` }), { 'if-match': etag }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 412]);
      const winner = a.status === 200 ? a : b;
      const loser = a.status === 200 ? b : a;
      await expectProblem(loser, 412, /precondition-failed/);
      const body = (await winner.json()) as any;
      expect(await row(id)).toEqual({ name: body.name, email: 'ada@example.com' });
      expect((await get(id)).headers.get('etag')).toBe(winner.headers.get('etag'));
    }
  });

  it('ten concurrent PUTs with the same ETag: exactly one wins, nine get 412', async () => {
    const id = newId();
    const etag = await create(id);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        put(id, customer({ name: `Writer ${i}` }), { 'if-match': etag }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 412)).toHaveLength(9);
    const winner = results.find((r) => r.status === 200)!;
    expect(await row(id)).toEqual({
      name: ((await winner.json()) as any).name,
      email: 'ada@example.com',
    });
  });

  it('answers 428 without If-Match or If-None-Match, and creates or changes nothing', async () => {
    const id = newId();
    await expectProblem(await put(id, customer()), 428, /precondition-required/);
    expect(await row(id)).toBeUndefined();
    expect((await get(id)).status).toBe(404);

    await create(id);
    await expectProblem(
      await put(id, customer({ name: 'No Header' })),
      428,
      /precondition-required/,
    );
    expect(await row(id)).toEqual(customer());
  });

  it('If-Match: * needs an existing customer: 412 when absent (nothing created), 200 when present', async () => {
    const id = newId();
    await expectProblem(await put(id, customer(), { 'if-match': '*' }), 412, /precondition-failed/);
    expect(await row(id)).toBeUndefined();

    const etag = await create(id);
    const r = await put(id, customer({ name: 'Any Version' }), { 'if-match': '*' });
    expect(r.status).toBe(200);
    expect(r.headers.get('etag')).not.toBe(etag);
    expect(await row(id)).toEqual(customer({ name: 'Any Version' }));
  });

  it('If-Match together with If-None-Match: * can never hold: 412, nothing written', async () => {
    const id = newId();
    const etag = await create(id);
    await expectProblem(
      await put(id, customer({ name: 'Both' }), { 'if-match': etag, 'if-none-match': '*' }),
      412,
      /precondition-failed/,
    );
    expect(await row(id)).toEqual(customer());
  });

  it('a weak ETag, an ETag of another shape, or an absent customer never match If-Match (412)', async () => {
    const id = newId();
    const etag = await create(id);
    await expectProblem(
      await put(id, customer({ name: 'Weak' }), { 'if-match': `W/${etag}` }),
      412,
      /precondition-failed/,
    );
    await expectProblem(
      await put(id, customer({ name: 'Shape' }), { 'if-match': '"not-a-version"' }),
      412,
      /precondition-failed/,
    );
    await expectProblem(
      await put(newId(), customer(), { 'if-match': etag }),
      412,
      /precondition-failed/,
    );
    expect(await row(id)).toEqual(customer());
  });

  it('a list in If-Match matches when one of its tags is the current ETag', async () => {
    const id = newId();
    const etag = await create(id);
    const r = await put(id, customer({ name: 'Listed' }), { 'if-match': `"123456789", ${etag}` });
    expect(r.status).toBe(200);
    expect(await row(id)).toEqual(customer({ name: 'Listed' }));
  });

  it.each([
    ['unquoted', 'abc'],
    ['unterminated', '"abc'],
    ['star and tag', '*, "1"'],
    ['no comma', '"1" "2"'],
  ])('a malformed If-Match (%s) gets 400 problem+json', async (_label, value) => {
    const id = newId();
    await create(id);
    await expectProblem(
      await put(id, customer({ name: 'Malformed' }), { 'if-match': value }),
      400,
      /precondition-header-invalid/,
    );
    expect(await row(id)).toEqual(customer());
  });

  it('If-None-Match with entity tags on PUT gets 400 (only * is supported on writes)', async () => {
    const id = newId();
    const etag = await create(id);
    await expectProblem(
      await put(id, customer({ name: 'Tags' }), { 'if-none-match': etag }),
      400,
      /precondition-header-invalid/,
    );
    expect(await row(id)).toEqual(customer());
  });

  it('an invalid body gets 400 problem+json and writes nothing', async () => {
    const id = newId();
    const etag = await create(id);
    const bad = await put(id, { name: '', email: 'not-an-email' }, { 'if-match': etag });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    expect(await row(id)).toEqual(customer());
    const badCreate = await put(
      newId(),
      { name: 'x'.repeat(201), email: 'a@example.com' },
      { 'if-none-match': '*' },
    );
    expect(badCreate.status).toBe(400);
    expect((await get(id)).headers.get('etag')).toBe(etag);
  });

  it('GET with If-None-Match: the current ETag gets 304 without a body, a stale one 200; absent customer 404', async () => {
    const id = newId();
    const stale = await create(id);
    const current = (
      await put(id, customer({ name: 'Changed' }), { 'if-match': stale })
    ).headers.get('etag')!;
    const notModified = await get(id, { 'if-none-match': current });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get('etag')).toBe(current);
    expect(await notModified.text()).toBe('');
    const modified = await get(id, { 'if-none-match': stale });
    expect(modified.status).toBe(200);
    expect(await modified.json()).toEqual({ id, ...customer({ name: 'Changed' }) });
    expect((await get(newId())).status).toBe(404);
  });

  it('PATCH with If-Match changes only the given field and moves the ETag; a stale one gets 412', async () => {
    const id = newId();
    const etag = await create(id);
    const r = await send('PATCH', id, { email: 'ada@king.example' }, { 'if-match': etag });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ id, name: 'Ada Lovelace', email: 'ada@king.example' });
    const next = r.headers.get('etag')!;
    expect(next).toMatch(STRONG_ETAG);
    expect(next).not.toBe(etag);
    await expectProblem(
      await send('PATCH', id, { name: 'Stale' }, { 'if-match': etag }),
      412,
      /precondition-failed/,
    );
    expect(await row(id)).toEqual({ name: 'Ada Lovelace', email: 'ada@king.example' });
    await expectProblem(await send('PATCH', id, { name: 'None' }), 428, /precondition-required/);
  });

  it('DELETE: a stale If-Match gets 412 and the row stays; the current one deletes (204); no header gets 428', async () => {
    const id = newId();
    const stale = await create(id);
    const current = (await put(id, customer({ name: 'Keep' }), { 'if-match': stale })).headers.get(
      'etag',
    )!;
    await expectProblem(await send('DELETE', id, undefined), 428, /precondition-required/);
    await expectProblem(
      await send('DELETE', id, undefined, { 'if-match': stale }),
      412,
      /precondition-failed/,
    );
    expect(await row(id)).toEqual(customer({ name: 'Keep' }));
    const deleted = await send('DELETE', id, undefined, { 'if-match': current });
    expect(deleted.status).toBe(204);
    expect(await row(id)).toBeUndefined();
    await expectProblem(
      await send('DELETE', id, undefined, { 'if-match': current }),
      412,
      /precondition-failed/,
    );
  });

  it('with an Idempotency-Key, a retried PUT replays the first answer and its ETag instead of failing with 412', async () => {
    const id = newId();
    const etag = await create(id);
    const key = randomUUID();
    const first = await put(id, customer({ name: 'Once' }), {
      'if-match': etag,
      'idempotency-key': key,
    });
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const retry = await put(id, customer({ name: 'Once' }), {
      'if-match': etag,
      'idempotency-key': key,
    });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(await retry.text()).toBe(firstBody);
    // The version moved once: the first answer's ETag is still the current one.
    expect((await get(id)).headers.get('etag')).toBe(first.headers.get('etag'));
    // Without the key the same request is a lost-update attempt.
    await expectProblem(
      await put(id, customer({ name: 'Once' }), { 'if-match': etag }),
      412,
      /precondition-failed/,
    );
    // If-Match is part of the fingerprint: the same key with another precondition is another request.
    const reused = await put(id, customer({ name: 'Once' }), {
      'if-match': first.headers.get('etag')!,
      'idempotency-key': key,
    });
    await expectProblem(reused, 422, /idempotency-key-reused/);
  });

  it('a 428 does not use up the Idempotency-Key: the same key with If-Match then runs', async () => {
    const id = newId();
    const etag = await create(id);
    const key = randomUUID();
    await expectProblem(
      await put(id, customer({ name: 'Keyed' }), { 'idempotency-key': key }),
      428,
      /precondition-required/,
    );
    const r = await put(id, customer({ name: 'Keyed' }), {
      'if-match': etag,
      'idempotency-key': key,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('idempotency-replayed')).toBeNull();
    expect(await row(id)).toEqual(customer({ name: 'Keyed' }));
  });

  it('a 412 under an Idempotency-Key is stored and replayed, and nothing is written', async () => {
    const id = newId();
    const stale = await create(id);
    await put(id, customer({ name: 'Moved On' }), { 'if-match': stale });
    const key = randomUUID();
    await expectProblem(
      await put(id, customer({ name: 'Late' }), { 'if-match': stale, 'idempotency-key': key }),
      412,
      /precondition-failed/,
    );
    const again = await put(id, customer({ name: 'Late' }), {
      'if-match': stale,
      'idempotency-key': key,
    });
    await expectProblem(again, 412, /precondition-failed/);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await row(id)).toEqual(customer({ name: 'Moved On' }));
  });

  it('ETags are derived from the stored version: a second app instance gives and accepts the same ones', async () => {
    const other = await startSampleApp(db.url, platform);
    try {
      const otherUrl = await baseUrl(other);
      const id = newId();
      const etag = await create(id);
      expect((await get(id, {}, otherUrl)).headers.get('etag')).toBe(etag);
      const r = await put(id, customer({ name: 'Via Other' }), { 'if-match': etag }, otherUrl);
      expect(r.status).toBe(200);
      expect((await get(id)).headers.get('etag')).toBe(r.headers.get('etag'));
      await expectProblem(
        await put(id, customer({ name: 'Stale Here' }), { 'if-match': etag }),
        412,
        /precondition-failed/,
      );
    } finally {
      await other.close();
    }
  });
});
