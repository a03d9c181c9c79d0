import { context as otelContext } from '@opentelemetry/api';
import { traceConsume } from '../observability/inbox.tracing';
import { MESSAGE_TYPE_HEADER } from './inbox.constants';
import { InboxMessageFailedError, InboxMessageIdMissingError } from './inbox.errors';
import type {
  ConsumedMessage,
  IdempotentConsumerOptions,
  InboxProcessOptions,
} from './inbox.interfaces';
import { MESSAGE_ID_INVALID } from './inbox.messages';
import { type InboxService, MAX_MESSAGE_ID_LENGTH } from './inbox.service';
import {
  defaultMessageId,
  DEFAULT_MESSAGE_ID_SOURCES,
  messageHeader,
  messagingSystemOf,
} from './message-id.extractor';

/** What `@IdempotentConsumer()` stores on a method. @internal */
export interface IdempotentConsumerDefinition {
  consumer: string;
  options: IdempotentConsumerOptions;
}

/** The subject (NATS) or pattern (RabbitMQ) of a transport context, if it has one. */
function subjectOf(context: unknown): string | undefined {
  const ctx = context as { getSubject?: () => unknown; getPattern?: () => unknown } | undefined;
  const s = ctx?.getSubject?.() ?? ctx?.getPattern?.();
  return typeof s === 'string' && s ? s : undefined;
}

/** Reads the message id through the consumer's extractor (or the default one). */
export function messageIdOf(def: IdempotentConsumerDefinition, message: ConsumedMessage): string {
  const extract = def.options.messageId ?? defaultMessageId;
  const raw = extract(message);
  const id = raw === undefined || raw === null ? '' : String(raw);
  if (!id) {
    throw new InboxMessageIdMissingError(
      def.consumer,
      def.options.messageId ? 'the configured messageId extractor' : DEFAULT_MESSAGE_ID_SOURCES,
    );
  }
  return id;
}

/**
 * Runs one consumed message through the inbox: extract the id, process, and settle the delivery
 * the way its transport needs (see InboxDeliveries): ack once the outcome committed (processed,
 * duplicate, recorded failed); after a failed attempt, have it run again after the inbox's
 * backoff delay (RabbitMQ: held, then requeued; at-most-once transports: again in place; others:
 * the error goes back to the sender); dead-letter what can never succeed (no message id;
 * recorded failed under `onMaxAttempts: 'rethrow'`). Resolves with the handler's result, or
 * undefined when the handler did not run.
 * On Kafka under `autoCommit: false`, the record's offset is committed once the outcome
 * committed (see KafkaOffsetCommitter).
 * @internal
 */
export async function consumeMessage(
  inbox: InboxService,
  def: IdempotentConsumerDefinition,
  message: ConsumedMessage,
  run: () => Promise<unknown>,
  handlerKind: 'event' | 'message' = 'event',
): Promise<unknown> {
  const delivery = inbox.deliveries.deliveryOf({
    message,
    consumer: def.consumer,
    acknowledge: def.options.acknowledge,
    handlerKind,
  });
  const settles = delivery.retryMode === 'transport';
  const record = inbox.kafkaOffsets?.manualRecord(message.context, def.options.acknowledge);
  // The consumer's span continues the message's trace (observability/inbox.tracing.ts).
  const traced = traceConsume(def.consumer, (name) => messageHeader(message, name), {
    system: messagingSystemOf(message.context),
    destination: messageHeader(message, MESSAGE_TYPE_HEADER) ?? subjectOf(message.context),
  });
  let id: string;
  try {
    id = messageIdOf(def, message);
    // An id the table cannot hold never succeeds either: refused, not retried forever.
    if (id.length > MAX_MESSAGE_ID_LENGTH) {
      throw new TypeError(MESSAGE_ID_INVALID(def.consumer, MAX_MESSAGE_ID_LENGTH));
    }
  } catch (e) {
    // It will never get an id: requeueing would loop. Dead-lettered when the queue has a DLX.
    delivery.reject();
    traced.failed('rejected', e, settles);
    throw e;
  }
  traced.messageId(id);
  const options: InboxProcessOptions = {
    maxAttempts: def.options.maxAttempts,
    onMaxAttempts: def.options.onMaxAttempts,
    strayWrites: def.options.strayWrites,
    backoffBaseMs: def.options.backoffBaseMs,
    backoffMaxMs: def.options.backoffMaxMs,
  };
  for (;;) {
    let outcome;
    try {
      outcome = await otelContext.with(traced.context, () =>
        inbox.process(def.consumer, id, run, options),
      );
    } catch (e) {
      // A message already recorded as failed (onMaxAttempts 'rethrow'): dead-letter it.
      if (e instanceof InboxMessageFailedError) {
        delivery.reject();
        traced.failed('failed', e, settles);
        throw e;
      }
      const delayMs = inbox.retryDelayMs(e, options);
      if (delivery.retryMode === 'in-place') {
        // Nobody redelivers: wait out the delay here and run again (until maxAttempts settles it).
        if (await inbox.deliveries.timers.sleep(delayMs)) continue;
      } else {
        // RabbitMQ: held unacknowledged for the delay, then requeued (see RmqDeliveryAcknowledger).
        delivery.retryAfter(delayMs, inbox.deliveries.timers);
      }
      traced.failed('retry', e, false);
      throw e;
    }
    delivery.ack();
    if (record) await inbox.kafkaOffsets!.commit(record, def.consumer);
    traced.settled(
      outcome.status,
      outcome.duplicate,
      outcome.attempts,
      outcome.status === 'failed' ? outcome.error : undefined,
    );
    return outcome.status === 'processed' ? outcome.result : undefined;
  }
}
