import type { DynamicModule } from '@nestjs/common';

/**
 * `POST /graphql` (code-first, schema in memory): Apollo on Express, Mercurius on Fastify
 * (HTTP_PLATFORM=fastify). Each driver is loaded only on its platform.
 */
export function graphqlModuleFor(platform: 'express' | 'fastify'): DynamicModule | undefined {
  const { GraphQLModule } = require('@nestjs/graphql') as typeof import('@nestjs/graphql');
  if (platform === 'fastify') {
    // @nestjs/mercurius registers Mercurius while the modules initialise, which makes Fastify
    // register the app's routes before Nest installs its error handler: an error Fastify raises
    // before a route runs (a body that is not JSON, one over the size limit) would then get
    // Fastify's default JSON instead of problem+json. So on Fastify, POST /graphql is opt-in.
    if (process.env.GRAPHQL_ON_FASTIFY !== 'true') return undefined;
    const { MercuriusDriver } = require('@nestjs/mercurius') as typeof import('@nestjs/mercurius');
    return GraphQLModule.forRoot({
      driver: MercuriusDriver,
      autoSchemaFile: true,
      graphiql: false,
      // No parsed-query cache: Mercurius loads its LRU with a dynamic import(), which the suites
      // that boot this module inside Jest cannot run (Jest's VM needs --experimental-vm-modules).
      cache: false,
    });
  }
  const { ApolloDriver } = require('@nestjs/apollo') as typeof import('@nestjs/apollo');
  return GraphQLModule.forRoot({
    driver: ApolloDriver,
    autoSchemaFile: true,
    playground: false,
    // Apollo puts the server's stack trace in every error's extensions unless NODE_ENV is
    // production or test; a payments API never shows its insides to callers.
    includeStacktraceInErrorResponses: false,
  });
}
