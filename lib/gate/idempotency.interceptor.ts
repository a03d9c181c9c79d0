import {
  CallHandler,
  ExecutionContext,
  Inject,
  Injectable,
  NestInterceptor,
  Optional,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ClsServiceManager } from 'nestjs-cls';
import { context as otelContext } from '@opentelemetry/api';
import { Observable, Subscriber } from 'rxjs';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedEndpointOptions, ResolvedIdempotencyOptions } from '../idempotency.options';
import { GateTrace } from '../observability/gate.tracing';
import { MetricsService } from '../observability/metrics.service';
import { DatabaseService } from '../persistence/database.service';
import { IdempotencyLedger, type SettledDecision } from '../persistence/idempotency-ledger';
import type { ProblemException } from '../problem-details';
import { toRetryAfterSeconds } from '../persistence/time';
import { answerAfterPoll } from './answer-after-poll';
import { ledgerRequestOf } from './call-gate';
import { ExactlyOnceEvents } from '../events/exactly-once.events';
import { GateAnswers } from './gate-answers';
import type { GuardedRequest } from './guarded-request';
import { HandlerExecution } from './handler-execution';
import {
  headerValue,
  headerValues,
  pathParams,
  queryString,
  requestPath,
  routeTemplate,
} from '../internal/http-platform';
import { IDEMPOTENCY_INFO, idempotencyInfo, setRequestInfo } from './idempotency-context';
import type { ReplayHeaders, ReplayResponse } from './idempotency-exception.filter';
import { keyFromHeader, keyFromValue } from './idempotency-key.parser';
import { InFlightRegistry } from './in-flight.registry';
import { LeasedMode } from './leased.mode';
import { buildScope } from './request-scope';
import { normalizePath, resourcePath } from './resource-path';
import { EndpointOptionsCache } from './endpoint-options.cache';
import { TransactionalMode } from './transactional.mode';

/**
 * The HTTP idempotency gate's Nest side: for each guarded request it resolves the endpoint's
 * options, reads the key, the resource and the fingerprint, and hands the guarded request to its
 * mode (transactional or leased), which reserves the key in the ledger, runs the handler once
 * inside the ambient transaction, stores the captured answer in the same transaction and lets
 * the bytes go to the client only after the commit. Retries replay the stored answer.
 * Protected hooks (`getKey`, `getResource`, `getTenant`, `getPrincipal`, `fingerprint`) can be
 * overridden by subclassing.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly endpoints: EndpointOptionsCache;
  private readonly replayHeadersCache = new WeakMap<object, ReplayHeaders>();
  private readonly registry: InFlightRegistry;
  private readonly answers: GateAnswers;
  private readonly transactional: TransactionalMode;
  private readonly leased: LeasedMode;

  constructor(
    private readonly reflector: Reflector,
    db: DatabaseService,
    private readonly ledger: IdempotencyLedger,
    metrics: MetricsService,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    @Optional() events?: ExactlyOnceEvents,
  ) {
    this.endpoints = new EndpointOptionsCache(reflector, options);
    this.registry = new InFlightRegistry(() => ledger.singleWriter);
    this.answers = new GateAnswers(metrics, options, events);
    const handler = new HandlerExecution(db, ledger, this.answers, metrics, options);
    this.transactional = new TransactionalMode(db, ledger, this.answers, handler, this.registry);
    this.leased = new LeasedMode(db, ledger, this.answers, handler, this.registry);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const opts = this.endpoints.of(context);
    const http = context.switchToHttp();
    const req = http.getRequest();

    if (opts.skip?.(req)) return next.handle();
    const key = this.getKey(req, opts);
    if (key === undefined) return next.handle();
    const path = this.getResource(req, context);
    const method = String(req.method).toUpperCase();
    const scope = buildScope(this.getTenant(req), this.getPrincipal(req), method, path);
    const info = idempotencyInfo(key, scope);
    setRequestInfo(req, info);
    const guarded: GuardedRequest = {
      opts,
      info,
      ledger: ledgerRequestOf(opts, scope, key, this.fingerprint(req, path, opts)),
      req,
      res: http.getResponse(),
      method,
      path,
      replayHeaders: this.replayHeadersOf(opts),
    };

    // A retry of a request whose answer this process's replay cache holds (the usual retry):
    // decided here, with no statement, no promise and no mode; written once the event loop has
    // read the requests that came with it (answer-after-poll.ts says why).
    if (!this.registry.has(scope, key)) {
      const cached = this.ledger.fromCache(guarded.ledger);
      if (cached) return answerAfterPoll(this.answerAtOnce(guarded, cached));
    }

    return new Observable((subscriber) => {
      const cls = ClsServiceManager.getClsService();
      const traced = this.startTrace(guarded);
      const run = () => {
        if (cls.isActive()) cls.set(IDEMPOTENCY_INFO as any, info);
        otelContext
          .with(traced.context, () => this.execute(guarded, next, subscriber))
          .then(
            () => traced.end(),
            (e) => {
              traced.end(e);
              subscriber.error(e);
            },
          );
      };
      if (cls.isActive()) run();
      else cls.run(run);
    });
  }

  /**
   * The gate's span for a guarded request: a child of the request's active span, else of the
   * caller's `traceparent`; everything the gate runs is inside it.
   */
  private startTrace(g: GuardedRequest): GateTrace {
    const traced = GateTrace.start(
      {
        method: g.method,
        route: routeTemplate(g.req, '') || g.path,
        path: g.path,
        headers: g.req.headers,
        scheme: typeof g.req.protocol === 'string' ? g.req.protocol : undefined,
      },
      g.opts.mode,
      () => g.info.keyHash,
    );
    g.trace = traced;
    return traced;
  }

  /** The answer of a decision the replay cache settled (replay or mismatch), traced and told. */
  private answerAtOnce(
    g: GuardedRequest,
    settled: SettledDecision,
  ): ReplayResponse | ProblemException {
    const traced = this.startTrace(g);
    const cls = ClsServiceManager.getClsService();
    if (cls.isActive()) cls.set(IDEMPOTENCY_INFO as any, g.info);
    const thrown = otelContext.with(traced.context, () =>
      this.answers.thrown(g, this.answers.of(g, settled)),
    );
    traced.end();
    return thrown;
  }

  /**
   * The request's idempotency key: `keyResolver` when the endpoint has one, else the header.
   * Undefined when there is none and the endpoint does not require one (the request runs
   * unguarded); a missing required key or an invalid one throws a 400 problem.
   */
  protected getKey(req: any, opts: ResolvedEndpointOptions): string | undefined {
    if (opts.keyResolver) return keyFromValue(opts.keyResolver(req), opts);
    return keyFromHeader(headerValues(req, opts.headerName), opts);
  }

  /**
   * The resource the request addresses: the matched route template with its (router-decoded)
   * path parameters filled in, so one key on `/customers/A` and `/customers/B` is two requests.
   * Override to scope keys differently.
   */
  protected getResource(req: any, context: ExecutionContext): string {
    const template = routeTemplate(req, '');
    return template
      ? resourcePath(template, pathParams(req))
      : normalizePath(requestPath(req)) ||
          `${context.getClass().name}.${context.getHandler().name}`;
  }

  /** Tenant of the request (override to read it elsewhere). */
  protected getTenant(req: any): string {
    return this.options.tenantResolver?.(req, 'http') ?? '-';
  }

  /** Principal of the request (override to read it elsewhere). */
  protected getPrincipal(req: any): string {
    return this.options.principalResolver?.(req, 'http') ?? '-';
  }

  /**
   * The request fingerprint (override to change what makes two requests "the same"): by default
   * method, resource path, sorted query, configured headers and the body (canonical JSON).
   */
  protected fingerprint(req: any, path: string, opts: ResolvedEndpointOptions): Buffer {
    return this.endpoints.fingerprint(opts, req, (f) => ({
      method: req.method,
      route: path,
      query: queryString(req),
      headers: f.headers.map((h) => [h.toLowerCase(), headerValue(req, h)]),
      contentType: headerValue(req, 'content-type'),
      body: req.body,
      rawBody: req.rawBody,
    }));
  }

  private replayHeadersOf(opts: ResolvedEndpointOptions): ReplayHeaders {
    let h = this.replayHeadersCache.get(opts);
    if (!h) {
      h = { replayed: opts.replayedHeaderName, status: opts.statusHeader };
      this.replayHeadersCache.set(opts, h);
    }
    return h;
  }

  /** A duplicate of a request in flight in this process answers at once; others go to their mode. */
  private async execute(
    g: GuardedRequest,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
  ): Promise<void> {
    const { scope, key } = g.info;
    if (this.registry.has(scope, key)) {
      // SQLite: the same key is in flight in this process.
      const leaseLeft = this.registry.leaseRemainingMs(scope, key);
      const retryAfterSeconds =
        leaseLeft === undefined
          ? g.opts.retryAfterSeconds
          : Math.min(toRetryAfterSeconds(leaseLeft), g.opts.retryAfterSeconds);
      const answer = await this.answers.waitOrAnswer(
        g,
        this.answers.of(g, { kind: 'in-progress', retryAfterSeconds }),
      );
      if (answer) return this.answers.send(g, answer, subscriber);
      return this.execute(g, next, subscriber);
    }
    try {
      if (g.opts.mode === 'transactional') await this.transactional.run(g, next, subscriber);
      else await this.leased.run(g, next, subscriber);
    } finally {
      this.registry.leave(scope, key, g.inFlightTicket);
    }
  }
}
