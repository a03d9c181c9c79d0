import { SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { METER_NAME } from './metric-instruments';

/** Tracer name of every span of the library (the same name as its meter). */
export const TRACER_NAME = METER_NAME;

/**
 * Attribute names of the library's spans: OpenTelemetry's semantic conventions where one fits
 * (messaging, HTTP), the library's own namespaces (`idempotency.*`, `outbox.*`, `inbox.*`) for the
 * rest. Written out here rather than imported from `@opentelemetry/semantic-conventions`'
 * incubating entry point, which its authors advise against depending on.
 */
export const TRACE_ATTRIBUTES = {
  // Messaging conventions. `messaging.system` is replaced by `messaging.system.name` in the newest
  // conventions: both are set, so backends of either generation group the spans.
  messagingSystem: 'messaging.system',
  messagingSystemName: 'messaging.system.name',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  consumerGroup: 'messaging.consumer.group.name',
  // HTTP conventions (the gate's span).
  httpMethod: 'http.request.method',
  httpRoute: 'http.route',
  httpStatus: 'http.response.status_code',
  urlPath: 'url.path',
  urlScheme: 'url.scheme',
  errorType: 'error.type',
  // The gate.
  gateOutcome: 'idempotency.outcome',
  gateMode: 'idempotency.mode',
  gateKeyHash: 'idempotency.key_hash',
  gateReplayed: 'idempotency.replayed',
  // The outbox.
  outboxAttempt: 'outbox.attempt',
  outboxDead: 'outbox.dead',
  outboxSeq: 'outbox.seq',
  // The inbox.
  inboxConsumer: 'inbox.consumer',
  inboxOutcome: 'inbox.outcome',
  inboxAttempts: 'inbox.attempts',
  inboxDuplicate: 'inbox.duplicate',
  inboxDeadLettered: 'inbox.dead_lettered',
} as const;

/**
 * The library's tracer, through `@opentelemetry/api` only: without an SDK it is the API's no-op
 * tracer (spans are non-recording and cost a few property reads). Looked up per span, so an SDK
 * registered after the module started is picked up.
 * @internal
 */
export function libraryTracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** Marks a span failed with the error (its class as `error.type`; the message, no payload). @internal */
export function recordFailure(span: Span, error: unknown, attributes: Attributes = {}): void {
  if (!span.isRecording()) return;
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  span.setAttributes({ [TRACE_ATTRIBUTES.errorType]: e.name || 'Error', ...attributes });
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}
