import { context as otelContext } from '@opentelemetry/api';
import { traceConsume } from '../observability/inbox.tracing';
import { MESSAGE_TYPE_HEADER } from './inbox.constants';
import { InboxMessageFailedError, InboxMessageIdMissingError } from './inbox.errors';
import type {
  ConsumedMessage,
  IdempotentConsumerOptions,
  InboxProcessOptions,
} from './inbox.interfaces';
import type { InboxService } from './inbox.service';
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
 * Runs one consumed message through the inbox: extract the id, process, and settle a RabbitMQ
 * delivery that needs a manual ack (see RmqDeliveryAcknowledger): ack once the outcome
 * committed (processed, duplicate, recorded failed), requeue after a failed attempt, dead-letter
 * what can never succeed (no message id; recorded failed under `onMaxAttempts: 'rethrow'`); on
 * Kafka under `autoCommit: false`, commit the record's offset once the outcome committed (see
 * KafkaOffsetCommitter).
 * Resolves with the handler's result, or undefined when the handler did not run.
 * @internal
 */
export async function consumeMessage(
  inbox: InboxService,
  def: IdempotentConsumerDefinition,
  message: ConsumedMessage,
  run: () => Promise<unknown>,
): Promise<unknown> {
  const acks = inbox.acknowledger;
  const delivery = acks.manualDelivery(message.context, def.consumer, def.options.acknowledge);
  const record = inbox.kafkaOffsets?.manualRecord(message.context, def.options.acknowledge);
  // The consumer's span continues the message's trace (observability/inbox.tracing.ts).
  const traced = traceConsume(def.consumer, (name) => messageHeader(message, name), {
    system: messagingSystemOf(message.context),
    destination: messageHeader(message, MESSAGE_TYPE_HEADER) ?? subjectOf(message.context),
  });
  let id: string;
  try {
    id = messageIdOf(def, message);
  } catch (e) {
    // It will never get an id: requeueing would loop. Dead-lettered when the queue has a DLX.
    if (delivery) acks.reject(delivery, def.consumer, false);
    traced.failed('rejected', e, !!delivery);
    throw e;
  }
  traced.messageId(id);
  const options: InboxProcessOptions = {
    maxAttempts: def.options.maxAttempts,
    onMaxAttempts: def.options.onMaxAttempts,
    strayWrites: def.options.strayWrites,
  };
  let outcome;
  try {
    outcome = await otelContext.with(traced.context, () =>
      inbox.process(def.consumer, id, run, options),
    );
  } catch (e) {
    // Retry later (requeue), except a message already recorded as failed: dead-letter it.
    const recordedFailed = e instanceof InboxMessageFailedError;
    if (delivery) acks.reject(delivery, def.consumer, !recordedFailed);
    traced.failed(recordedFailed ? 'failed' : 'retry', e, recordedFailed && !!delivery);
    throw e;
  }
  if (delivery) acks.ack(delivery, def.consumer);
  if (record) await inbox.kafkaOffsets!.commit(record, def.consumer);
  traced.settled(
    outcome.status,
    outcome.duplicate,
    outcome.attempts,
    outcome.status === 'failed' ? outcome.error : undefined,
  );
  return outcome.status === 'processed' ? outcome.result : undefined;
}
