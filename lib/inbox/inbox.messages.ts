/** Texts of the inbox's errors and log lines. */

export const MESSAGE_ID_MISSING = (consumer: string, looked: string) =>
  `@IdempotentConsumer() ${consumer}: the message carries no message id (looked at ${looked}). ` +
  `It was not processed, so that a redelivery cannot run it twice. Publish with a message id ` +
  `(the outbox relay always sends one) or pass a messageId extractor to @IdempotentConsumer().`;

export const MESSAGE_ID_INVALID = (consumer: string, max: number) =>
  `InboxService: the message id for consumer "${consumer}" must be a non-empty string of at most ${max} characters.`;

export const CONSUMER_INVALID = (max: number) =>
  `InboxService: the consumer name must be a non-empty string of at most ${max} characters.`;

export const MESSAGE_FAILED = (
  consumer: string,
  messageId: string,
  attempts: number,
  lastError: string | null,
) =>
  `Inbox: message ${messageId} for consumer "${consumer}" is recorded as failed after ${attempts} attempt(s)` +
  `${lastError ? ` (last error: ${lastError})` : ''}; it is not run again until its inbox record is reset.`;

export const GAVE_UP = (consumer: string, messageId: string, attempts: number) =>
  `Inbox: consumer "${consumer}" gave up on message ${messageId} after ${attempts} failed attempt(s); recorded as failed.`;

export const FAILURE_NOT_RECORDED = (consumer: string, messageId: string) =>
  `Inbox: could not count the failed attempt of message ${messageId} for consumer "${consumer}"; the handler's error is rethrown.`;

export const NO_INBOX_SERVICE = (consumer: string) =>
  `@IdempotentConsumer() ${consumer} was called, but no InboxService is running: import IdempotencyModule.forRoot() ` +
  `(or forRootAsync()) in the application module and call the method on the instance Nest created.`;

export const CONNECTION_LOST = (consumer: string, messageId: string) =>
  `Inbox: the database connection was lost while consumer "${consumer}" handled message ${messageId}; ` +
  `rolled back and not counted as a failed attempt (the database failed, not the message): it runs again on redelivery.`;

export const CLAIM_RETRIES_EXHAUSTED = (consumer: string, messageId: string, tries: number) =>
  `Inbox: could not record message ${messageId} for consumer "${consumer}" after ${tries} deadlock/lock-timeout retries.`;

export const MAX_ATTEMPTS_INVALID = (v: unknown) =>
  `Inbox: maxAttempts must be a positive integer, got ${String(v)}.`;

export const ON_MAX_ATTEMPTS_INVALID = (v: unknown) =>
  `Inbox: onMaxAttempts must be 'ack' or 'rethrow', got ${String(v)}.`;

export const STRAY_WRITES_INVALID = (v: unknown) =>
  `Inbox: strayWrites must be 'error', 'warn' or 'ignore', got ${String(v)}.`;

export const ACK_ON_AUTO_ACK_CONSUMER = (consumer: string) =>
  `Inbox: consumer "${consumer}" has acknowledge: true, but its RabbitMQ server consumes with noAck: true ` +
  `(RabbitMQ acknowledged the delivery already, and an ack would close the channel): not acknowledged. ` +
  `Start the microservice with noAck: false to acknowledge after the inbox commits, or drop acknowledge: true.`;

export const ACK_MODE_UNKNOWN = (consumer: string) =>
  `Inbox: consumer "${consumer}" got a RabbitMQ delivery from a server whose noAck setting cannot be told ` +
  `(several RabbitMQ servers with different noAck, or a custom transport): the delivery is not acknowledged. ` +
  `Say it: @IdempotentConsumer({ acknowledge: true }) when that server runs with noAck: false, ` +
  `acknowledge: false when it runs with noAck: true (or the handler acks itself).`;

export const ACK_FAILED = (consumer: string, error: unknown) =>
  `Inbox: could not settle the RabbitMQ delivery of consumer "${consumer}" (${String(error)}); ` +
  `the broker redelivers it when the channel closes, and the inbox settles the copy.`;

export const KAFKA_COMMIT_FAILED = (
  consumer: string,
  topic: string,
  partition: number,
  error: unknown,
) =>
  `Inbox: could not commit the Kafka offset of consumer "${consumer}" on ${topic}[${partition}] (${String(error)}); ` +
  `the record is delivered again after a rebalance or restart, and the inbox skips it.`;

export const RMQ_SERVER_CHANNEL_ERROR = (error: unknown) =>
  `RabbitMQ: the consuming channel could not be set up (${String(error)}); ` +
  `it is set up again, consumer included, when the connection is back.`;

export const RMQ_CONSUME_FAILED = (queue: string, error: unknown) =>
  `RabbitMQ: the consumer on queue "${queue}" did not start (${String(error)}); ` +
  `it starts again when the connection is back, and unacknowledged deliveries are redelivered.`;

export const BACKOFF_INVALID = (base: unknown, max: unknown) =>
  `Inbox: backoffBaseMs must be a number >= 0 and backoffMaxMs a number >= backoffBaseMs, got ${String(base)} and ${String(max)}.`;

export const REPLY_NOT_STORED = (consumer: string) =>
  `This request was already processed (or recorded as failed) by ${consumer}; @IdempotentConsumer() stores message ids, not replies, so it cannot answer again. Guard request handlers (@MessagePattern) with @Idempotent() to replay the reply.`;
