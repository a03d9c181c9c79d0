import { NestFactory } from '@nestjs/core';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Args,
  GraphQLModule,
  Mutation,
  Query,
  Resolver,
  ResolveField,
  Subscription,
} from '@nestjs/graphql';
import { Idempotent } from '../../lib';
import { InboxFixtureModule } from '../fixtures/inbox/inbox-fixture.module';
import { createTestDatabase, type TestDatabase } from '../support/databases';

@Resolver()
class QueryResolver {
  @Query(() => String)
  @Idempotent()
  ping() {
    return 'pong';
  }
}

@Resolver()
class SubscriptionResolver {
  @Query(() => String)
  ping() {
    return 'pong';
  }

  @Subscription(() => String)
  @Idempotent()
  ticks() {
    return undefined;
  }
}

@Resolver(() => String)
class FieldResolver {
  @Query(() => String)
  ping() {
    return 'pong';
  }

  @ResolveField(() => String)
  @Idempotent()
  length() {
    return '1';
  }
}

@Resolver()
class KeyResolverMutation {
  @Query(() => String)
  ping() {
    return 'pong';
  }

  @Mutation(() => String)
  @Idempotent({ keyResolver: (req: any) => req.headers['x-key'] })
  go(@Args('n') n: string) {
    return n;
  }
}

/** Wiring mistakes of @Idempotent() on GraphQL resolvers fail at boot, naming the fix. */
describe('@Idempotent() on GraphQL resolvers: refused at boot', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
  });
  afterAll(() => db?.drop());

  const boot = (resolver: any) =>
    NestFactory.create(
      InboxFixtureModule.register({
        dbUrl: db.url,
        imports: [
          GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
        ],
        providers: [resolver],
      }),
      { logger: false, abortOnError: false },
    ).then((app) => app.init().finally(() => app.close()));

  it('on a @Query()', async () => {
    await expect(boot(QueryResolver)).rejects.toThrow(
      /@Idempotent\(\) on QueryResolver\.ping\(\): a GraphQL query .*Put @Idempotent\(\) on a @Mutation\(\) resolver/,
    );
  });

  it('on a @Subscription()', async () => {
    await expect(boot(SubscriptionResolver)).rejects.toThrow(
      /SubscriptionResolver\.ticks\(\): a GraphQL subscription .*@Mutation\(\)/,
    );
  });

  it('on a @ResolveField()', async () => {
    await expect(boot(FieldResolver)).rejects.toThrow(
      /FieldResolver\.length\(\): a GraphQL field resolver/,
    );
  });

  it('keyResolver on a mutation (HTTP only): names keyFrom', async () => {
    await expect(boot(KeyResolverMutation)).rejects.toThrow(
      /keyResolver\(req\) is for HTTP routes.*keyFrom/,
    );
  });
});
