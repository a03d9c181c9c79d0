import type { Request } from 'express';
import type { FastifyRequest } from 'fastify';
import { IdempotencyModule, type IdempotencyModuleOptions } from '../../lib';

/**
 * `tenantResolver` and `principalResolver` get a typed request in forRoot and forRootAsync (they
 * were `any`). Checked by the compiler when this spec is compiled: a `@ts-expect-error` that no
 * longer meets an error (the request typed `any` again) fails the compile, so the spec.
 */
describe('the resolvers are typed', () => {
  it('forRootAsync: the factory result types the request; platform-typed resolvers still fit', () => {
    const module = IdempotencyModule.forRootAsync({
      inject: [],
      useFactory: async () => ({
        tenantResolver: (req) => {
          // @ts-expect-error headers are IncomingHttpHeaders: a header is string | string[]
          const n: number = req.headers['x-tenant-id'];
          void n;
          // @ts-expect-error not a field of the request
          void req.notAField;
          return String(req.headers['x-tenant-id'] ?? 'public');
        },
        // What the auth guard set is the app's shape (the README's `req.user?.id`).
        principalResolver: (req) => req.user?.id,
      }),
    });
    expect(module.module).toBe(IdempotencyModule);
  });

  it('forRoot, and resolvers written for Express or Fastify requests', () => {
    const express = (req: Request) => req.get('x-tenant-id');
    const fastify = (req: FastifyRequest) => req.headers['x-tenant-id'] as string | undefined;
    const options: IdempotencyModuleOptions = {
      tenantResolver: express,
      principalResolver: fastify,
    };
    // @ts-expect-error a resolver returns a string (or nothing)
    const wrong: IdempotencyModuleOptions = { tenantResolver: (req) => req.headers };
    void wrong;
    expect(IdempotencyModule.forRoot(options).module).toBe(IdempotencyModule);
  });
});
