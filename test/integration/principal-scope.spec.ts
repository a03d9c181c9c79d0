import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { deriveKey } from '../../lib/gate/idempotency-context';
import { buildScope } from '../../lib/gate/request-scope';
import { openDataSource, placeholder, type TestDatabase } from '../support/databases';
import {
  databasePlatformCases,
  startAppOnDatabase,
  stopAppOnDatabase,
} from '../support/app-on-database';
import { startSampleApp } from '../support/sample-app';

const cases = databasePlatformCases();

/**
 * The principal is who the caller is (the subject SampleAuthGuard put on the request), not the
 * credential it holds: a retry after a token refresh is the same request; another user's token
 * is another scope.
 */
describe.each(cases)('idempotency scope by subject on %s / %s', (kind, platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startSampleApp(dbUrl, platform, { AUTH_TOKEN_SECRET: randomUUID() }),
    ));
    ds = await openDataSource(db.url);
  });

  afterAll(() => stopAppOnDatabase({ ds, app, db }));

  const tokenFor = async (subject: string): Promise<string> => {
    const r = await fetch(`${url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ subject }),
    });
    expect(r.status).toBe(200);
    return ((await r.json()) as { access_token: string }).access_token;
  };
  const pay = (key: string, authorization: string) =>
    fetch(`${url}/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key, authorization },
      body: JSON.stringify({ amount: 10, currency: 'EUR', customerId: 'refresh-1' }),
    });
  const scopesOf = async (key: string): Promise<string[]> =>
    (
      await ds.query(
        `SELECT scope FROM idempotency_records WHERE idempotency_key = ${placeholder(kind, 0)}`,
        [key],
      )
    ).map((r: { scope: string }) => r.scope);

  it('a retry with a refreshed token for the same user replays; another user runs once of their own', async () => {
    const key = randomUUID();
    const before = await tokenFor('alice');
    const refreshed = await tokenFor('alice');
    expect(refreshed).not.toBe(before);

    const first = await pay(key, `Bearer ${before}`);
    expect(first.status).toBe(201);
    const firstBody = await first.text();

    const retry = await pay(key, `Bearer ${refreshed}`);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(await retry.text()).toBe(firstBody);

    const bob = await pay(key, `Bearer ${await tokenFor('bob')}`);
    expect(bob.status).toBe(201);
    expect(bob.headers.get('idempotency-replayed')).toBeNull();
    expect(((await bob.json()) as { id: string }).id).not.toBe(JSON.parse(firstBody).id);

    // One record per user: both of alice's tokens are in one scope, so any key derived for a
    // downstream call (IdempotencyContext.derivedKey) is the same on the retry.
    const alice = buildScope('public', 'user:alice', 'POST', '/payments');
    const scopes = await scopesOf(key);
    expect(scopes.sort()).toEqual(
      [alice, buildScope('public', 'user:bob', 'POST', '/payments')].sort(),
    );
    expect(deriveKey({ scope: scopes.find((s) => s === alice)!, key } as never, 'charge')).toBe(
      deriveKey({ scope: alice, key } as never, 'charge'),
    );
  });

  it('a forged token is refused with 401 before the gate: nothing stored, the key free', async () => {
    const key = randomUUID();
    const token = await tokenFor('carol');
    const [header, payload] = token.split('.');
    const forged = `${header}.${payload}.${'A'.repeat(43)}`;
    const refused = await pay(key, `Bearer ${forged}`);
    expect(refused.status).toBe(401);
    expect(await scopesOf(key)).toEqual([]);
    expect((await pay(key, `Bearer ${token}`)).status).toBe(201);
  });

  it('an API key (any other Authorization value) is its own client: two keys, two scopes', async () => {
    const key = randomUUID();
    const a = await pay(key, 'Bearer api-key-a');
    const again = await pay(key, 'Bearer api-key-a');
    const b = await pay(key, 'Bearer api-key-b');
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(b.headers.get('idempotency-replayed')).toBeNull();
    expect(((await b.json()) as { id: string }).id).not.toBe(
      ((await a.json()) as { id: string }).id,
    );
  });
});
