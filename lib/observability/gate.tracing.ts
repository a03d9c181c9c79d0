import { SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import { PROBLEM_TYPES } from '../problem-details/problem-types';
import { libraryTracer, TRACE_ATTRIBUTES as A } from './library-tracer';
import { requestParent } from './trace-context';

/**
 * How the gate answered a guarded request, as the `idempotency.outcome` span attribute:
 * `created` (first execution, answer stored), `replayed` (the stored answer again),
 * `in_progress` (409, the first request still runs), `mismatch` (the key was used with another
 * request), `misconfigured` (500, e.g. a missing table), `unavailable` (503, the database
 * failed), `lease_lost`, `unreadable` (a stored answer that cannot be decrypted),
 * `not_stored` (the handler ran and its answer was not stored: a 5xx, a status not kept, a
 * request rejected before the handler body, an answer that cannot be snapshotted).
 */
export type GateOutcome =
  | 'created'
  | 'replayed'
  | 'in_progress'
  | 'mismatch'
  | 'misconfigured'
  | 'unavailable'
  | 'lease_lost'
  | 'unreadable'
  | 'not_stored';

const OUTCOME_OF_PROBLEM: Readonly<Record<string, GateOutcome>> = {
  [PROBLEM_TYPES.inProgress]: 'in_progress',
  [PROBLEM_TYPES.mismatch]: 'mismatch',
  [PROBLEM_TYPES.misconfigured]: 'misconfigured',
  [PROBLEM_TYPES.unavailable]: 'unavailable',
  [PROBLEM_TYPES.leaseLost]: 'lease_lost',
  [PROBLEM_TYPES.storedResponseUnreadable]: 'unreadable',
  // A stored answer under a key no longer in the ring, or plaintext while keys are set.
  [PROBLEM_TYPES.storedResponseKeyUnknown]: 'unreadable',
  [PROBLEM_TYPES.storedResponseNotEncrypted]: 'unreadable',
};

/** Outcomes that are the server's fault: the span's status is ERROR. */
const FAILED: ReadonlySet<GateOutcome> = new Set(['misconfigured', 'unavailable', 'unreadable']);

/**
 * The span of one guarded request: `idempotency <METHOD> <route>`. Its parent is the request's
 * active span (the HTTP server span of the app's instrumentation), and the span is INTERNAL.
 * With no active span, it continues the caller's trace from the request's `traceparent` /
 * `tracestate` (see `requestParent`) and is then the process's entry span for the request:
 * SERVER, the counterpart of the caller's CLIENT span, with `url.path` and `url.scheme` as the
 * HTTP server conventions require (its name stays the library's). Without either it is a root (INTERNAL). It carries the mode,
 * the key's short hash (never the key, never the body) and, once answered, the outcome and the
 * status. The handler, the ledger's statements and `OutboxService.add()` run inside it, so
 * their spans and the outbox message's stored trace context are its descendants.
 * @internal
 */
export class GateTrace {
  private outcome: GateOutcome | undefined;
  private status: number | undefined;

  private constructor(
    readonly span: Span,
    readonly context: Context,
  ) {}

  static start(
    request: {
      method: string;
      route: string;
      path: string;
      headers?: IncomingHttpHeaders;
      /** `http` or `https` as the platform tells it (Express and Fastify: `req.protocol`). */
      scheme?: string;
    },
    mode: string,
    keyHash: () => string,
  ): GateTrace {
    const { method, route } = request;
    const parent = requestParent(request.headers);
    const span = libraryTracer().startSpan(
      `idempotency ${method} ${route}`,
      { kind: parent.remote ? SpanKind.SERVER : SpanKind.INTERNAL },
      parent.context,
    );
    // The hash is a SHA-256 the gate computes lazily: only for a span that is recorded.
    if (span.isRecording()) {
      span.setAttributes({
        [A.httpMethod]: method,
        [A.httpRoute]: route,
        [A.gateMode]: mode,
        [A.gateKeyHash]: keyHash(),
      });
      if (parent.remote) {
        span.setAttributes({ [A.urlPath]: request.path, [A.urlScheme]: request.scheme ?? 'http' });
      }
    }
    return new GateTrace(span, trace.setSpan(parent.context, span));
  }

  /** The answer was the first execution's, stored. */
  created(status: number): void {
    this.settle('created', status);
  }

  /** The answer was a replay of the stored one. */
  replayed(status: number): void {
    this.settle('replayed', status);
  }

  /** The answer was a problem of the gate (409, 422, 500, 503). */
  problem(type: string, status: number): void {
    const outcome = OUTCOME_OF_PROBLEM[type];
    if (outcome) this.settle(outcome, status);
  }

  /** Ends the span; a request answered by none of the above ran its handler without storing. */
  end(error?: unknown): void {
    const span = this.span;
    if (!span.isRecording()) return span.end();
    const outcome = this.outcome ?? 'not_stored';
    span.setAttribute(A.gateOutcome, outcome);
    span.setAttribute(A.gateReplayed, outcome === 'replayed');
    if (this.status !== undefined) span.setAttribute(A.httpStatus, this.status);
    if (FAILED.has(outcome)) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    else if (error !== undefined) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    span.end();
  }

  private settle(outcome: GateOutcome, status: number): void {
    // The last answer stands (a wait loop answers `in_progress` before the replay it waited for).
    this.outcome = outcome;
    this.status = status;
    if (this.span.isRecording()) this.span.addEvent(`idempotency.${outcome}`);
  }
}
