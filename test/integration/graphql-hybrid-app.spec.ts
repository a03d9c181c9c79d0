import type { INestApplication } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Args, Field, GraphQLModule, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
import type { ClientProxy } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { lastValueFrom } from 'rxjs';
import type { DataSource } from 'typeorm';
import { Idempotent, type IdempotencyContextType } from '../../lib';
import { EffectsWriter } from '../fixtures/inbox/inbox-fixture.module';
import { postOrder, startHybridApp } from '../fixtures/rpc/hybrid-app';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';

/** What the tenant resolver was told: the context type and what the request names. */
const TOLD: Array<[IdempotencyContextType, unknown]> = [];

@ObjectType()
class PlacedOrder {
  @Field() via!: string;
  @Field() id!: string;
}

@Resolver(() => PlacedOrder)
class OrdersResolver {
  constructor(private readonly effects: EffectsWriter) {}

  @Query(() => String)
  ping() {
    return 'pong';
  }

  @Mutation(() => PlacedOrder)
  @Idempotent()
  async createOrder(@Args('note') note: string) {
    await this.effects.record('graphql', '-', note);
    return { via: 'graphql', id: randomUUID() };
  }
}

/**
 * One process, one IdempotencyModule, HTTP, GraphQL (Apollo on the same Express server) and a TCP
 * microservice: each context keeps its own records, so one key used over all three is three
 * requests, each replayed in its own context; the tenant resolver is told which context asks.
 */
describe.each(databaseKinds())('hybrid app (HTTP + GraphQL + RPC), %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let app: INestApplication;
  let client: ClientProxy;
  let url: string;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    ({ app, url, client } = await startHybridApp({
      dbUrl: db.url,
      providers: [OrdersResolver],
      imports: [
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
      ],
      idempotency: {
        tenantResolver: (req: any, type: IdempotencyContextType) => {
          TOLD.push([type, type === 'http' ? req.method : req.url]);
          // The GraphQL request carries the HTTP request's headers.
          return type === 'graphql' ? req.headers['x-tenant-id'] : 'acme';
        },
      },
    }));
    ds = await openDataSource(db.url);
  }, 300_000);

  afterAll(async () => {
    client?.close();
    await app?.close();
    await ds?.destroy();
    await db?.drop();
  });

  const effects = async (consumer: string, note: string): Promise<number> =>
    (
      await ds.query(
        `SELECT id FROM inbox_effects WHERE consumer = ${placeholder(kind, 0)} AND note = ${placeholder(kind, 1)}`,
        [consumer, note],
      )
    ).length;

  it('one key over HTTP, GraphQL and RPC: three requests, each replayed in its own context', async () => {
    const key = randomUUID();
    const note = randomUUID();
    const post = () => postOrder(url, key, note);
    const mutate = async () => {
      const r = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          'x-tenant-id': 'tenant-gql',
        },
        body: JSON.stringify({
          query: 'mutation($n: String!) { createOrder(note: $n) { via id } }',
          variables: { n: note },
        }),
      });
      const body: any = await r.json();
      expect(body.errors).toBeUndefined();
      return { body: body.data.createOrder, replayed: r.headers.get('idempotency-replayed') };
    };
    const send = () => lastValueFrom(client.send('hybrid.orders.create', { note, key }));
    const h1 = await post();
    const g1 = await mutate();
    const r1 = await send();
    expect([h1.body.via, g1.body.via, (r1 as any).via]).toEqual(['http', 'graphql', 'rpc']);
    const h2 = await post();
    const g2 = await mutate();
    const r2 = await send();
    expect(h2.body).toEqual(h1.body);
    expect(g2.body).toEqual(g1.body);
    expect(r2).toEqual(r1);
    expect([h2.replayed, g2.replayed]).toEqual(['true', 'true']);
    expect([
      await effects('http', note),
      await effects('graphql', note),
      await effects('rpc', note),
    ]).toEqual([1, 1, 1]);
    expect(TOLD).toEqual(
      expect.arrayContaining([
        ['http', 'POST'],
        ['graphql', 'createOrder'],
        ['rpc', 'hybrid.orders.create'],
      ]),
    );
    // The GraphQL call's tenant came from its HTTP request's header: its record is in that scope.
    const scopes: Array<{ scope: string }> = await ds.query(
      `SELECT scope FROM idempotency_records WHERE scope LIKE ${placeholder(kind, 0)}`,
      ['%graphql:createOrder'],
    );
    expect(scopes.map((s) => s.scope)).toContain('tenant-gql|-|graphql:createOrder');
  });
});
