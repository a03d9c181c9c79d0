import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { defer, lastValueFrom, type Observable, throwError } from 'rxjs';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type {
  IdempotentGraphqlRequest,
  ResolvedEndpointOptions,
  ResolvedIdempotencyOptions,
} from '../idempotency.options';
import { ProblemException } from '../problem-details';
import { CallGate, type GuardedCall, guardedCallOf } from '../gate/call-gate';
import { EndpointOptionsCache } from '../gate/endpoint-options.cache';
import { trackHandlerBody, type HandlerBodyState } from '../gate/handler-body.tracker';
import { keyFromHeader, keyFromValue } from '../gate/idempotency-key.parser';
import { replayedGraphqlError, storableGraphqlError, toGraphqlError } from './graphql.errors';
import {
  graphqlHeaderValues,
  graphqlHttpOf,
  type GraphqlHttp,
  responsePathOf,
  setGraphqlResponseHeader,
} from './graphql-key.reader';

/**
 * `@Idempotent()` on a GraphQL mutation resolver (`@Mutation()`, code-first or schema-first, any
 * driver): reads the call — the key from the HTTP request's `headerName` header or
 * `keyFrom(args, context)`; the scope `tenant|principal|graphql:<response path>` (one record per
 * guarded field of an operation, aliases included); the fingerprint of the field and its
 * arguments — and hands it to the CallGate, which runs the resolver once in the transaction that
 * stores its value. A retry gets the stored value without the resolver running, and the HTTP
 * response carries the replay header; a thrown 4xx (HttpException) is stored and thrown again on
 * a retry; a gate problem is a GraphQL error with `extensions.code` (see graphql.errors.ts).
 * Protected hooks can be overridden by subclassing.
 * @internal
 */
@Injectable()
export class GraphqlIdempotencyInterceptor implements NestInterceptor {
  private readonly endpoints: EndpointOptionsCache;

  constructor(
    private readonly reflector: Reflector,
    private readonly gate: CallGate,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {
    this.endpoints = new EndpointOptionsCache(reflector, options);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const [, args, gqlContext, info] = context.getArgs() as [unknown, unknown, unknown, any];
    // Only a root mutation field is guarded: a class-wide @Idempotent() leaves the class's
    // queries and field resolvers alone (a decorated one is refused at boot).
    if (!info || !info.schema || info.parentType !== info.schema.getMutationType()) {
      return next.handle();
    }
    const opts = this.endpoints.of(context);
    const http = graphqlHttpOf(gqlContext);
    const path = responsePathOf(info.path);
    const field = `${info.parentType.name}.${info.fieldName}`;
    const request: IdempotentGraphqlRequest = {
      method: 'GRAPHQL',
      url: path,
      headers: http.req?.headers ?? {},
      body: args,
      args,
      context: gqlContext,
      info,
      field,
      path,
      req: http.req,
      user: http.req?.user,
    };
    if (opts.skip?.(request)) return next.handle();
    let call: GuardedCall | undefined;
    try {
      call = this.read(request, http, opts);
    } catch (e) {
      const refused = e instanceof ProblemException ? toGraphqlError(e) : e;
      return throwError(() => refused);
    }
    if (!call) return next.handle();
    const guarded = call;
    let body: HandlerBodyState | undefined;
    // Rejected by a pipe before the resolver ran (validation): nothing is stored, as over HTTP.
    guarded.storableError = (e) =>
      body?.started ? storableGraphqlError(e, opts.storeStatus) : undefined;
    return defer(async () => {
      const outcome = await this.gate.run(guarded, () => {
        const tracked = trackHandlerBody(() =>
          lastValueFrom(next.handle(), { defaultValue: undefined }),
        );
        body = tracked.state;
        return tracked.result;
      });
      if (outcome.kind === 'refused') throw toGraphqlError(outcome.error);
      if (outcome.kind === 'replayed') {
        setGraphqlResponseHeader(http, opts.replayedHeaderName, 'true');
        if (outcome.status >= 400) throw replayedGraphqlError(outcome.status, outcome.value);
      }
      return outcome.value;
    });
  }

  /** The guarded call, or undefined when there is no key and none is required. */
  private read(
    request: IdempotentGraphqlRequest,
    http: GraphqlHttp,
    opts: ResolvedEndpointOptions,
  ): GuardedCall | undefined {
    return guardedCallOf(opts, this.getKey(request, http, opts), () => ({
      context: 'graphql',
      subject: request.path,
      request,
      tenant: this.getTenant(request),
      principal: this.getPrincipal(request),
      requestHash: this.fingerprint(request, opts),
    }));
  }

  /**
   * The field's key: `keyFrom(args, context)` when the resolver has one, else the HTTP request's
   * `headerName` header (one key for every guarded field of the operation: the field's path
   * tells their records apart). Undefined when there is none and none is required; a missing
   * required key or an invalid one throws a 400 problem (IDEMPOTENCY_KEY_REQUIRED / _INVALID).
   */
  protected getKey(
    request: IdempotentGraphqlRequest,
    http: GraphqlHttp,
    opts: ResolvedEndpointOptions,
  ): string | undefined {
    if (opts.keyFrom) return keyFromValue(opts.keyFrom(request.args, request.context), opts);
    return keyFromHeader(graphqlHeaderValues(http, opts.headerName), opts);
  }

  /** Tenant of the call (override to read it elsewhere). */
  protected getTenant(request: IdempotentGraphqlRequest): string {
    return this.options.tenantResolver?.(request, 'graphql') ?? '-';
  }

  /** Principal of the call (override to read it elsewhere). */
  protected getPrincipal(request: IdempotentGraphqlRequest): string {
    return this.options.principalResolver?.(request, 'graphql') ?? '-';
  }

  /**
   * What makes two calls with one key "the same call": the field (`Mutation.createPayment`) and
   * its arguments as canonical JSON (`fingerprint.excludeBodyPaths` / `includeBodyPaths` apply to
   * the arguments, `headers` to the HTTP request's headers), or the app's function of the
   * request, or none.
   */
  protected fingerprint(request: IdempotentGraphqlRequest, opts: ResolvedEndpointOptions): Buffer {
    return this.endpoints.fingerprint(opts, request, (f) => ({
      method: 'GRAPHQL',
      route: request.field,
      query: '',
      headers: f.headers.map((h) => [
        h.toLowerCase(),
        graphqlHeaderValues(graphqlHttpOf(request.context), h)[0],
      ]),
      contentType: 'application/json',
      body: request.args ?? null,
      rawBody: undefined,
    }));
  }
}
