import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { RpcException } from '@nestjs/microservices';
import { defer, finalize, lastValueFrom, type Observable, throwError } from 'rxjs';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type {
  IdempotentRpcRequest,
  ResolvedEndpointOptions,
  ResolvedIdempotencyOptions,
} from '../idempotency.options';
import { ProblemException } from '../problem-details';
import { CallGate, type GuardedCall, guardedCallOf } from '../gate/call-gate';
import { canonicalJson } from '../gate/canonical-json';
import { keyFromHeader, keyFromValue } from '../gate/idempotency-key.parser';
import { EndpointOptionsCache } from '../gate/endpoint-options.cache';
import { RmqDeliveryAcknowledger } from '../inbox/rmq-delivery.acknowledger';
import { rpcProblem } from './rpc.errors';
import { rpcHeaderValues } from './rpc-key.reader';
import { EVENT_HANDLER, PATTERN_HANDLER_METADATA, PATTERN_METADATA } from './rpc.constants';

/**
 * `@Idempotent()` on a microservice request handler (`@MessagePattern`): reads the call (the key
 * from the transport's `headerName` header, or `keyFrom(data, context)`; the scope
 * `tenant|principal|rpc:<pattern>`; the fingerprint of the payload) and hands it to the CallGate,
 * which runs the handler once in the transaction that stores its reply. A duplicate gets the
 * same reply; a problem (in flight 409, reused 422, missing or invalid key 400, database 503)
 * reaches the caller as an RpcException whose error is the problem (see RpcProblem).
 * Protected hooks can be overridden by subclassing.
 * @internal
 */
@Injectable()
export class RpcIdempotencyInterceptor implements NestInterceptor {
  private readonly endpoints: EndpointOptionsCache;
  private readonly patterns = new WeakMap<object, string>();

  constructor(
    private readonly reflector: Reflector,
    private readonly gate: CallGate,
    private readonly acks: RmqDeliveryAcknowledger,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {
    this.endpoints = new EndpointOptionsCache(reflector, options);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    // An event has no reply to store: a class-wide @Idempotent() leaves it to the inbox.
    if (Reflect.getMetadata(PATTERN_HANDLER_METADATA, context.getHandler()) === EVENT_HANDLER) {
      return next.handle();
    }
    const opts = this.endpoints.of(context);
    const rpc = context.switchToRpc();
    const data: unknown = rpc.getData();
    const pattern = this.patternOf(context);
    const request: IdempotentRpcRequest = {
      method: 'RPC',
      url: pattern,
      headers: {},
      body: data,
      data,
      context: rpc.getContext(),
      pattern,
    };
    if (opts.skip?.(request)) return next.handle();
    let call: GuardedCall | undefined;
    try {
      call = this.read(request, opts);
    } catch (e) {
      const refused = e instanceof ProblemException ? toRpcException(e) : e;
      return this.settleDelivery(
        request,
        throwError(() => refused),
      );
    }
    if (!call) return next.handle();
    const guarded = call;
    const answer = defer(async () => {
      const outcome = await this.gate.run(guarded, () =>
        lastValueFrom(next.handle(), { defaultValue: undefined }),
      );
      if (outcome.kind === 'refused') throw toRpcException(outcome.error);
      return outcome.value;
    });
    return this.settleDelivery(request, answer);
  }

  /**
   * RabbitMQ with `noAck: false`: Nest acknowledges no request itself, so the gate does once the
   * request is answered (its outcome committed, or nothing was): a redelivery would only run the
   * gate again and send a second reply. A crash before the ack redelivers it: a replay.
   */
  private settleDelivery(request: IdempotentRpcRequest, answer: Observable<unknown>) {
    const delivery = this.acks.manualDelivery(request.context, request.pattern, 'auto');
    if (!delivery) return answer;
    return answer.pipe(finalize(() => this.acks.ack(delivery, request.pattern)));
  }

  /** The guarded call, or undefined when there is no key and none is required. */
  private read(
    request: IdempotentRpcRequest,
    opts: ResolvedEndpointOptions,
  ): GuardedCall | undefined {
    return guardedCallOf(opts, this.getKey(request, opts), () => ({
      context: 'rpc',
      subject: request.pattern,
      request,
      tenant: this.getTenant(request),
      principal: this.getPrincipal(request),
      requestHash: this.fingerprint(request, opts),
    }));
  }

  /**
   * The call's key: `keyFrom(data, context)` when the handler has one, else the transport's
   * `headerName` header (only optional white space, SP and HTAB, around the value, as for the
   * HTTP header). Undefined when there is none and none is required; a missing required key or
   * an invalid one throws a 400 problem.
   */
  protected getKey(
    request: IdempotentRpcRequest,
    opts: ResolvedEndpointOptions,
  ): string | undefined {
    if (opts.keyFrom) return keyFromValue(opts.keyFrom(request.data, request.context), opts);
    return keyFromHeader(rpcHeaderValues(request.context, opts.headerName), opts);
  }

  /** Tenant of the call (override to read it elsewhere). */
  protected getTenant(request: IdempotentRpcRequest): string {
    return this.options.tenantResolver?.(request, 'rpc') ?? '-';
  }

  /** Principal of the call (override to read it elsewhere). */
  protected getPrincipal(request: IdempotentRpcRequest): string {
    return this.options.principalResolver?.(request, 'rpc') ?? '-';
  }

  /**
   * What makes two calls with one key "the same call": the pattern and the payload as canonical
   * JSON (`fingerprint.excludeBodyPaths` / `includeBodyPaths` apply to the payload; `headers` to
   * the transport's headers), or the app's function of the request, or none.
   */
  protected fingerprint(request: IdempotentRpcRequest, opts: ResolvedEndpointOptions): Buffer {
    return this.endpoints.fingerprint(opts, request, (f) => {
      const body = request.data === undefined ? null : request.data;
      return {
        method: 'RPC',
        route: request.pattern,
        query: '',
        headers: f.headers.map((h) => [h.toLowerCase(), rpcHeaderValues(request.context, h)[0]]),
        contentType: 'application/json',
        body: Buffer.isBuffer(body) ? body.toString('base64') : body,
        rawBody: undefined,
      };
    });
  }

  /** The handler's declared pattern(s), as text: what the scope names. */
  private patternOf(context: ExecutionContext): string {
    const handler = context.getHandler();
    let p = this.patterns.get(handler);
    if (p === undefined) {
      const declared: unknown = Reflect.getMetadata(PATTERN_METADATA, handler);
      const list = Array.isArray(declared) ? declared : declared === undefined ? [] : [declared];
      p =
        list.map((x) => (typeof x === 'string' ? x : canonicalJson(x))).join(',') ||
        `${context.getClass().name}.${handler.name}`;
      this.patterns.set(handler, p);
    }
    return p;
  }
}

/**
 * The RpcException a caller receives for a gate problem. Loaded when first needed: an RPC context
 * means `@nestjs/microservices` is installed, and HTTP-only apps need not install it.
 */
export function toRpcException(e: ProblemException): RpcException {
  const { RpcException: Rpc } =
    require('@nestjs/microservices') as typeof import('@nestjs/microservices');
  return new Rpc(rpcProblem(e));
}
