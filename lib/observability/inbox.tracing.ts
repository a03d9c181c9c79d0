import {
  context,
  propagation,
  SpanKind,
  trace,
  type Context,
  type TextMapGetter,
} from '@opentelemetry/api';
import { libraryTracer, recordFailure, TRACE_ATTRIBUTES as A } from './library-tracer';

/** Reads one header of a consumed message (however its transport carries headers). */
export type HeaderReader = (name: string) => string | undefined;

const getter: TextMapGetter<HeaderReader> = {
  keys: () => [],
  get: (read, key) => read(key),
};

/**
 * How a delivery ended, as `inbox.outcome`: `processed` (the handler ran, its effects
 * committed), `duplicate` (already processed: skipped, the handler did not run), `failed` (the
 * message is recorded as failed after `maxAttempts`), `retry` (the handler failed, the attempt
 * is counted, the broker redelivers), `rejected` (no message id).
 */
export type InboxOutcome = 'processed' | 'duplicate' | 'failed' | 'retry' | 'rejected';

/** One consumed message's span. @internal */
export interface ConsumeTrace {
  /** The span's context: the inbox claim and the handler run inside it. */
  readonly context: Context;
  /** The inbox settled the delivery; `duplicate`: the handler did not run for it. */
  settled(
    outcome: 'processed' | 'duplicate' | 'failed',
    duplicate: boolean,
    attempts: number,
    error?: unknown,
  ): void;
  /** The delivery failed: it is redelivered (`retry`) or refused (`failed`, `rejected`). */
  failed(outcome: 'retry' | 'failed' | 'rejected', error: unknown, deadLettered: boolean): void;
}

/**
 * A consumed message: a `process <type>` CONSUMER span that continues the message's trace (its
 * parent is the context the relay's `send` span put in the message's headers, read through the
 * app's global propagator), so one trace runs from the HTTP request to the consumer's writes.
 * It carries the consumer (`messaging.consumer.group.name`, `inbox.consumer`), the message id,
 * and how the delivery ended (`inbox.outcome`, `inbox.duplicate`, `inbox.attempts`,
 * `inbox.dead_lettered`). Without an SDK it is a no-op span and the extract reads nothing.
 * @internal
 */
export function traceConsume(
  consumer: string,
  readHeader: HeaderReader,
  transport: { system?: string; destination?: string },
): ConsumeTrace & { messageId(id: string): void } {
  const parent = propagation.extract(context.active(), readHeader, getter);
  const span = libraryTracer().startSpan(
    `process ${transport.destination ?? consumer}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        ...(transport.system
          ? { [A.messagingSystem]: transport.system, [A.messagingSystemName]: transport.system }
          : {}),
        [A.operationType]: 'process',
        [A.operationName]: 'process',
        ...(transport.destination ? { [A.destination]: transport.destination } : {}),
        [A.consumerGroup]: consumer,
        [A.inboxConsumer]: consumer,
      },
    },
    parent,
  );
  return {
    context: trace.setSpan(parent, span),
    messageId(id) {
      span.setAttribute(A.messageId, id);
    },
    settled(outcome, duplicate, attempts, error) {
      if (span.isRecording()) {
        span.setAttributes({
          [A.inboxOutcome]: outcome,
          [A.inboxDuplicate]: duplicate,
          [A.inboxAttempts]: attempts,
        });
        if (duplicate) span.addEvent('inbox.duplicate_skipped');
        // This delivery's failure was the last attempt: recorded failed, acknowledged.
        if (outcome === 'failed' && !duplicate) {
          recordFailure(span, error ?? new Error('inbox: maxAttempts reached'), {
            [A.inboxDeadLettered]: false,
          });
        }
      }
      span.end();
    },
    failed(outcome, error, deadLettered) {
      recordFailure(span, error, {
        [A.inboxOutcome]: outcome,
        [A.inboxDuplicate]: false,
        [A.inboxDeadLettered]: deadLettered,
      });
      span.end();
    },
  };
}
