import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { InboxFixtureModule } from '../fixtures/inbox/inbox-fixture.module';
import { GQL_RUNS, graphqlModule, type GraphqlSetup } from '../fixtures/graphql/graphql-orders';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';

const SETUPS: GraphqlSetup[] = ['apollo-express', 'mercurius-fastify'];
const CASES = databaseKinds().flatMap((kind) => SETUPS.map((setup) => [setup, kind] as const));

/** One GraphQL response over HTTP: its body and the replay header. */
interface GqlAnswer {
  status: number;
  body: {
    data?: Record<string, any> | null;
    errors?: Array<{ message: string; extensions?: any; path?: unknown[] }>;
  };
  replayed: string | null;
}

const CREATE = (field = 'createOrder') => /* GraphQL */ `
  mutation Create($input: OrderInput!) { ${field}(input: $input) { id amount note } }
`;

/**
 * `@Idempotent()` on GraphQL mutations over real HTTP: Apollo on Express (code-first) and
 * Mercurius on Fastify (schema-first), on every database. Each guarded field runs once per key;
 * a retry gets the stored value and the replay header; the gate's refusals are GraphQL errors
 * with `extensions.code`; a thrown 4xx is stored and replayed, a 5xx frees the key.
 */
describe.each(CASES)('@Idempotent() on GraphQL mutations, %s, %s', (setup, kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    const gql = graphqlModule(setup);
    const module = InboxFixtureModule.register({
      dbUrl: db.url,
      imports: [gql.module],
      providers: [gql.resolver],
    });
    if (setup === 'apollo-express') {
      app = await NestFactory.create(module, { logger: false });
    } else {
      const { FastifyAdapter } = await import('@nestjs/platform-fastify');
      app = await NestFactory.create(module, new FastifyAdapter(), { logger: false });
    }
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1') + '/graphql';
    ds = await openDataSource(db.url);
  }, 300_000);

  afterAll(async () => {
    await app?.close();
    await ds?.destroy();
    await db?.drop();
  });

  const gql = async (
    query: string,
    variables: Record<string, unknown>,
    key?: string | string[],
  ): Promise<GqlAnswer> => {
    const headers = new Headers({ 'content-type': 'application/json' });
    for (const k of key === undefined ? [] : Array.isArray(key) ? key : [key]) {
      headers.append('idempotency-key', k);
    }
    const r = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query, variables }),
    });
    return {
      status: r.status,
      body: await r.json(),
      replayed: r.headers.get('idempotency-replayed'),
    };
  };

  const effects = async (note: string): Promise<number> =>
    (await ds.query(`SELECT id FROM inbox_effects WHERE note = ${placeholder(kind, 0)}`, [note]))
      .length;

  it('a retry with the same key gets the same value and the replay header; the resolver ran once', async () => {
    const key = randomUUID();
    const input = { amount: 12.5, note: randomUUID() };
    const first = await gql(CREATE(), { input }, key);
    expect(first.body.errors).toBeUndefined();
    expect(first.replayed).toBeNull();
    const order = first.body.data!.createOrder;
    expect(order).toMatchObject({ amount: 12.5, note: input.note });
    const second = await gql(CREATE(), { input }, key);
    expect(second.body.errors).toBeUndefined();
    expect(second.body.data!.createOrder).toEqual(order);
    expect(second.replayed).toBe('true');
    expect(GQL_RUNS.get(input.note)).toBe(1);
    expect(await effects(input.note)).toBe(1);
  });

  it('the same key with other arguments: IDEMPOTENCY_KEY_REUSED, status 422, nothing run', async () => {
    const key = randomUUID();
    const note = randomUUID();
    await gql(CREATE(), { input: { amount: 1, note } }, key);
    const other = await gql(CREATE(), { input: { amount: 2, note } }, key);
    expect(other.body.data?.createOrder ?? null).toBeNull();
    expect(other.body.errors).toHaveLength(1);
    expect(other.body.errors![0].extensions).toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSED',
      status: 422,
      retryable: false,
    });
    expect(other.body.errors![0].path).toEqual(['createOrder']);
    expect(GQL_RUNS.get(note)).toBe(1);
    expect(await effects(note)).toBe(1);
  });

  it('concurrent duplicates over HTTP: one execution; the others the same value or IDEMPOTENCY_KEY_IN_USE with retryAfter', async () => {
    const key = randomUUID();
    const input = { amount: 3, note: randomUUID(), delayMs: 400 };
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => gql(CREATE(), { input }, key)),
    );
    const ids = new Set<string>();
    let inUse = 0;
    for (const a of answers) {
      if (a.body.errors) {
        expect(a.body.errors[0].extensions).toMatchObject({
          code: 'IDEMPOTENCY_KEY_IN_USE',
          status: 409,
          retryable: true,
        });
        expect(a.body.errors[0].extensions.retryAfter).toBeGreaterThanOrEqual(1);
        inUse++;
      } else ids.add(a.body.data!.createOrder.id);
    }
    expect(ids.size).toBe(1);
    expect(inUse).toBeLessThan(5);
    expect(GQL_RUNS.get(input.note)).toBe(1);
    expect(await effects(input.note)).toBe(1);
    // Once settled, a retry is the replay of the one execution.
    const retry = await gql(CREATE(), { input }, key);
    expect(retry.body.data!.createOrder.id).toBe([...ids][0]);
    expect(retry.replayed).toBe('true');
  });

  it('two aliased guarded fields in one operation: one record each, both replayed', async () => {
    const key = randomUUID();
    const [n1, n2] = [randomUUID(), randomUUID()];
    const op = /* GraphQL */ `
      mutation Two($a: OrderInput!, $b: OrderInput!) {
        first: createOrder(input: $a) {
          id
          note
        }
        second: createOrder(input: $b) {
          id
          note
        }
      }
    `;
    const vars = { a: { amount: 1, note: n1 }, b: { amount: 1, note: n2 } };
    const once = await gql(op, vars, key);
    expect(once.body.errors).toBeUndefined();
    expect(once.body.data!.first.note).toBe(n1);
    expect(once.body.data!.second.note).toBe(n2);
    expect(once.body.data!.first.id).not.toBe(once.body.data!.second.id);
    const again = await gql(op, vars, key);
    expect(again.body.data).toEqual(once.body.data);
    expect(again.replayed).toBe('true');
    expect([GQL_RUNS.get(n1), GQL_RUNS.get(n2)]).toEqual([1, 1]);
    expect([await effects(n1), await effects(n2)]).toEqual([1, 1]);
  });

  it('a missing key: IDEMPOTENCY_KEY_REQUIRED (400); an invalid one: IDEMPOTENCY_KEY_INVALID (400); nothing run', async () => {
    const note = randomUUID();
    const missing = await gql(CREATE(), { input: { amount: 1, note } });
    expect(missing.body.errors![0].extensions).toMatchObject({
      code: 'IDEMPOTENCY_KEY_REQUIRED',
      status: 400,
    });
    const invalid = await gql(CREATE(), { input: { amount: 1, note } }, 'not\u00a0ascii');
    expect(invalid.body.errors![0].extensions).toMatchObject({
      code: 'IDEMPOTENCY_KEY_INVALID',
      status: 400,
    });
    const twice = await gql(CREATE(), { input: { amount: 1, note } }, ['k1', 'k2']);
    expect(twice.body.errors![0].extensions).toMatchObject({ code: 'IDEMPOTENCY_KEY_INVALID' });
    expect(GQL_RUNS.get(note)).toBeUndefined();
    expect(await effects(note)).toBe(0);
  });

  it('a thrown 4xx is stored and replayed (its writes rolled back); the resolver does not run again', async () => {
    const key = randomUUID();
    const input = { amount: 1, note: randomUUID(), fail: 402 };
    const first = await gql(CREATE(), { input }, key);
    expect(first.body.errors).toHaveLength(1);
    expect(first.body.errors![0].message).toBe('order refused (402)');
    const second = await gql(CREATE(), { input }, key);
    expect(second.replayed).toBe('true');
    expect(second.body.errors).toEqual(first.body.errors);
    expect(GQL_RUNS.get(input.note)).toBe(1);
    expect(await effects(input.note)).toBe(0);
  });

  it('a thrown 5xx releases the key: the retry runs the resolver again', async () => {
    const key = randomUUID();
    const note = randomUUID();
    const failed = await gql(CREATE(), { input: { amount: 1, note, fail: 503 } }, key);
    expect(failed.body.errors![0].message).toBe('order refused (503)');
    expect(await effects(note)).toBe(0);
    const retry = await gql(CREATE(), { input: { amount: 1, note, fail: 503 } }, key);
    expect(retry.replayed).toBeNull();
    expect(GQL_RUNS.get(note)).toBe(2);
  });

  it('keyFrom(args, context): the key from the arguments, no header needed', async () => {
    const input = { amount: 4, note: randomUUID(), requestId: randomUUID() };
    const first = await gql(CREATE('createOrderByArg'), { input });
    const second = await gql(CREATE('createOrderByArg'), { input });
    expect(second.body.data!.createOrderByArg).toEqual(first.body.data!.createOrderByArg);
    expect(second.replayed).toBe('true');
    expect(GQL_RUNS.get(input.note)).toBe(1);
  });

  it('an unguarded mutation and a query run as usual', async () => {
    const note = randomUUID();
    await gql(CREATE('plainOrder'), { input: { amount: 1, note } }, 'same');
    await gql(CREATE('plainOrder'), { input: { amount: 1, note } }, 'same');
    expect(await effects(note)).toBe(2);
    const ping = await gql('{ ping }', {});
    expect(ping.body.data).toEqual({ ping: 'pong' });
  });
});
