import {
  CallHandler,
  ExecutionContext,
  HttpStatus,
  Inject,
  Injectable,
  NestInterceptor,
} from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { ClsServiceManager } from 'nestjs-cls';
import { Observable } from 'rxjs';
import { map } from 'rxjs/operators';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';
import { type ConditionalState, setRequestState } from './conditional-context';
import { CONDITIONAL_METADATA, CONDITIONAL_STATE } from './conditional.constants';
import { preconditionFailed, preconditionRequired } from './conditional.errors';
import { NO_ETAG, PRECONDITIONS_IGNORED } from './conditional.messages';
import { EntityTag, parseEntityTag, strongMatch, weakMatch } from './entity-tag';
import { hasPreconditions, Preconditions, readPreconditions } from './preconditions';

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** Options of `@ConditionalUpdate()`. */
export interface ConditionalUpdateOptions {
  /**
   * Reject a request with neither If-Match nor If-None-Match with 428 Precondition Required.
   * Default true: a client cannot overwrite what it has not read.
   */
  required?: boolean;
}

/** @internal What the decorators store. */
export interface ConditionalMetadata {
  kind: 'update' | 'read';
  required: boolean;
}

/**
 * Runs `@ConditionalUpdate()` and `@ConditionalRead()` endpoints. Before the handler: parses
 * If-Match / If-None-Match (400 when malformed) and, on updates, answers 428 when the endpoint
 * requires a precondition and none was sent; the parsed preconditions are what ConditionalWriter
 * applies. After the handler: sets the `ETag` of the written or read version, 201 for a create;
 * on reads, evaluates If-Match (412) and If-None-Match (304) against that ETag.
 * Protected hooks can be overridden by subclassing.
 */
@Injectable()
export class ConditionalInterceptor implements NestInterceptor {
  private readonly logger: LibraryLogger;
  private readonly warned = new WeakSet<object>();

  constructor(
    private readonly reflector: Reflector,
    private readonly adapterHost: HttpAdapterHost,
    @Inject(IDEMPOTENCY_OPTIONS) options: ResolvedIdempotencyOptions,
  ) {
    this.logger = new LibraryLogger(options.logger, 'ConditionalRequests');
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const meta = this.reflector.getAllAndOverride<ConditionalMetadata | undefined>(
      CONDITIONAL_METADATA,
      [context.getHandler(), context.getClass()],
    );
    if (!meta) return next.handle();
    const http = context.switchToHttp();
    const req = http.getRequest();
    const res = http.getResponse();
    // Under a controller-wide @ConditionalUpdate(), GET and HEAD handlers act as @ConditionalRead().
    const kind =
      meta.kind === 'update' && SAFE_METHODS.has(String(req.method).toUpperCase())
        ? 'read'
        : meta.kind;
    const preconditions = this.readPreconditions(req);
    if (kind === 'update' && meta.required && !hasPreconditions(preconditions)) {
      throw preconditionRequired();
    }
    const state: ConditionalState = { preconditions, created: false, consumed: false };
    setRequestState(req, state);

    return new Observable((subscriber) => {
      const cls = ClsServiceManager.getClsService();
      const run = () => {
        cls.set(CONDITIONAL_STATE as any, state);
        return next
          .handle()
          .pipe(
            map((value) =>
              kind === 'update'
                ? this.afterUpdate(context, res, state, value)
                : this.afterRead(context, res, state, value),
            ),
          )
          .subscribe(subscriber);
      };
      if (cls.isActive()) return run();
      let subscription: { unsubscribe(): void } | undefined;
      cls.run(() => {
        subscription = run();
      });
      return () => subscription?.unsubscribe();
    });
  }

  /** The app's HTTP adapter (Express or Fastify), as the host has it. */
  private get adapter() {
    return this.adapterHost.httpAdapter;
  }

  /** The request's preconditions (override to read them elsewhere). */
  protected readPreconditions(req: any): Preconditions {
    return readPreconditions(req);
  }

  /** After a successful write: the new ETag, and 201 when the write created the resource. */
  protected afterUpdate(
    context: ExecutionContext,
    res: any,
    state: ConditionalState,
    value: unknown,
  ): unknown {
    if (state.etag) this.adapter.setHeader(res, 'ETag', state.etag);
    if (
      state.created &&
      Reflect.getMetadata(HTTP_CODE_METADATA, context.getHandler()) === undefined
    ) {
      this.adapter.status(res, HttpStatus.CREATED);
    }
    if (hasPreconditions(state.preconditions) && !state.consumed) {
      this.warnOnce(context, PRECONDITIONS_IGNORED(this.where(context)));
    }
    return value;
  }

  /** After a read: the ETag, then If-Match (412) and If-None-Match (304) against it (RFC 9110 §13.2.2). */
  protected afterRead(
    context: ExecutionContext,
    res: any,
    state: ConditionalState,
    value: unknown,
  ): unknown {
    if (!state.etag) {
      this.warnOnce(context, NO_ETAG(this.where(context)));
      return value;
    }
    this.adapter.setHeader(res, 'ETag', state.etag);
    const current = parseEntityTag(state.etag);
    const { ifMatch, ifNoneMatch } = state.preconditions;
    if (ifMatch !== undefined && !matches(ifMatch, current, strongMatch)) {
      throw preconditionFailed('The resource does not have the version named in If-Match.');
    }
    if (ifNoneMatch !== undefined && matches(ifNoneMatch, current, weakMatch)) {
      this.adapter.status(res, HttpStatus.NOT_MODIFIED);
      return undefined;
    }
    return value;
  }

  private where(context: ExecutionContext): string {
    return `${context.getClass().name}.${context.getHandler().name}`;
  }

  private warnOnce(context: ExecutionContext, message: string): void {
    const handler = context.getHandler();
    if (!this.logger.enabled || this.warned.has(handler)) return;
    this.warned.add(handler);
    this.logger.warn(message);
  }
}

function matches(
  condition: '*' | EntityTag[],
  current: EntityTag | undefined,
  compare: (a: EntityTag, b: EntityTag) => boolean,
): boolean {
  if (condition === '*') return true;
  return !!current && condition.some((tag) => compare(tag, current));
}
