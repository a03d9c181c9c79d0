import {
  CallHandler,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  Optional,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { IdempotencyMisconfiguredError } from '../persistence/database-misconfigured';
import { GraphqlIdempotencyInterceptor } from '../graphql/graphql-idempotency.interceptor';
import { RpcIdempotencyInterceptor } from '../rpc/rpc-idempotency.interceptor';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IDEMPOTENT_WITHOUT_MODULE } from './idempotency.messages';

/**
 * What `@Idempotent()` puts on a handler: hands each call to the gate of IdempotencyModule for
 * its context (HTTP routes to the HTTP gate, microservice requests to the RPC adapter, GraphQL
 * mutations to the GraphQL adapter).
 * Nest creates it in the controller's module when the app is created; without IdempotencyModule
 * imported, it fails there with a message naming the fix, rather than Nest's generic "can't
 * resolve dependencies of the IdempotencyInterceptor".
 * @internal
 */
@Injectable()
export class IdempotentRouteInterceptor implements NestInterceptor {
  private readonly gate: IdempotencyInterceptor;
  private readonly rpc: RpcIdempotencyInterceptor;
  private readonly graphql: GraphqlIdempotencyInterceptor;

  constructor(
    @Optional() gate?: IdempotencyInterceptor,
    @Optional() rpc?: RpcIdempotencyInterceptor,
    @Optional() graphql?: GraphqlIdempotencyInterceptor,
  ) {
    if (!gate || !rpc || !graphql) {
      throw new IdempotencyMisconfiguredError(IDEMPOTENT_WITHOUT_MODULE);
    }
    this.gate = gate;
    this.rpc = rpc;
    this.graphql = graphql;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const type = context.getType();
    if (type === 'http') return this.gate.intercept(context, next);
    if (type === 'rpc') return this.rpc.intercept(context, next);
    if ((type as string) === 'graphql') return this.graphql.intercept(context, next);
    return next.handle();
  }
}
