import {
  context,
  propagation,
  SpanKind,
  trace,
  type Attributes,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api';
import { libraryTracer, recordFailure, TRACE_ATTRIBUTES as A } from './library-tracer';

/** A message as the outbox's tracing sees it (a row being written, a message being published). */
interface TracedMessage {
  readonly id: string;
  readonly type: string;
}

const getter: TextMapGetter<Readonly<Record<string, string>>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

const messaging = (
  operation: 'create' | 'send',
  m: TracedMessage,
  system?: string,
): Attributes => ({
  ...(system ? { [A.messagingSystem]: system, [A.messagingSystemName]: system } : {}),
  [A.operationType]: operation,
  [A.operationName]: operation,
  [A.destination]: m.type,
  [A.messageId]: m.id,
});

/**
 * `OutboxService.add()`: one `create <type>` PRODUCER span per message (the messaging
 * conventions' creation context), a child of the active span (the gate's, the handler's), and
 * its context injected, through the app's global propagator (W3C `traceparent`, `tracestate`,
 * `baggage` with the SDK's defaults), into the message's stored headers. A header the app set
 * itself wins. `end()` once the rows are written (or failed). Without an SDK the propagator
 * injects nothing and the stored headers stay as they were.
 * @internal
 */
export function traceOutboxAdd(rows: Array<TracedMessage & { headers: string | null }>): {
  end(error?: unknown): void;
} {
  const tracer = libraryTracer();
  const parent = context.active();
  const spans: Span[] = [];
  for (const row of rows) {
    const span = tracer.startSpan(
      `create ${row.type}`,
      { kind: SpanKind.PRODUCER, attributes: messaging('create', row) },
      parent,
    );
    spans.push(span);
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(parent, span), carrier);
    if (Object.keys(carrier).length === 0) continue;
    const own = row.headers ? (JSON.parse(row.headers) as Record<string, string>) : {};
    row.headers = JSON.stringify({ ...carrier, ...own });
  }
  return {
    end(error?: unknown) {
      for (const span of spans) {
        if (error !== undefined) recordFailure(span, error);
        span.end();
      }
    },
  };
}

/** One publish of the relay: the span and the message with the span's context in its headers. */
export interface PublishTrace<M> {
  readonly message: M;
  end(error: Error | undefined, attempt: number, dead: boolean): void;
}

/**
 * The relay's publish of one message: a `send <type>` PRODUCER span whose parent is the context
 * stored with the message (the `create` span of `OutboxService.add()`, so the publish minutes
 * later is in the request's trace), and the message's headers given this span's context, so
 * the consumer's span is its child. `message.headers` go to the broker as they are (AMQP
 * headers, NATS headers, Service Bus application properties, the function publisher's
 * message). A message stored with no context starts a new trace.
 * @internal
 */
export function tracePublish<
  M extends TracedMessage & { readonly headers: Readonly<Record<string, string>> },
>(message: M, system: string | undefined, seq: string): PublishTrace<M> {
  const stored = propagation.extract(context.active(), message.headers, getter);
  const span = libraryTracer().startSpan(
    `send ${message.type}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: { ...messaging('send', message, system), [A.outboxSeq]: seq },
    },
    stored,
  );
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(stored, span), carrier);
  const traced = Object.keys(carrier).length
    ? { ...message, headers: { ...message.headers, ...carrier } }
    : message;
  return {
    message: traced,
    end(error, attempt, dead) {
      if (span.isRecording()) {
        span.setAttribute(A.outboxAttempt, attempt);
        if (error) recordFailure(span, error, { [A.outboxDead]: dead });
      }
      span.end();
    },
  };
}
