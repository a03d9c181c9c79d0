import type { InboxAcknowledge, InboxOptions } from './inbox.options';

/** How one delivery ended. */
export type InboxResult<T> =
  /** The handler ran and its effects committed together with the inbox record. */
  | { status: 'processed'; duplicate: false; result: T; attempts: number }
  /** The message id was already processed by this consumer: the handler did not run. */
  | { status: 'duplicate'; duplicate: true; attempts: number }
  /**
   * The message is recorded as failed (`maxAttempts` reached) and acknowledged: `duplicate` is
   * false when this delivery's failure was the last attempt (`error` is its error), true when an
   * earlier delivery had already given up.
   */
  | { status: 'failed'; duplicate: boolean; attempts: number; error?: unknown };

/** Per-call overrides of the module's `inbox` options. */
export type InboxProcessOptions = Partial<Required<InboxOptions>>;

/** A consumed message as an extractor sees it. */
export interface ConsumedMessage {
  /** `rpc`: a Nest microservices handler (@EventPattern / @MessagePattern); `event`: an in-process listener or a direct call. */
  kind: 'rpc' | 'event';
  /** The payload: the packet data (rpc) or the listener's first argument (event). */
  data: unknown;
  /** The transport's context (RmqContext, NatsContext, KafkaContext, …) when there is one. */
  context?: unknown;
  /** The handler's arguments as the framework passed them. */
  args: unknown[];
}

/** Reads the message id of a consumed message; `undefined`/`null`/'' means "none". */
export type MessageIdExtractor = (message: ConsumedMessage) => string | number | undefined | null;

export interface IdempotentConsumerOptions extends InboxProcessOptions {
  /** The consumer name, part of the inbox key. Default: `ClassName.methodName`. */
  consumer?: string;
  /**
   * Where the message id comes from. Default ({@link defaultMessageId}): the id the outbox relay
   * sent, else the transport's own id (RabbitMQ `messageId` property, NATS / Kafka `message-id`
   * header), else a `messageId` field of the payload.
   */
  messageId?: MessageIdExtractor;
  /**
   * Settling RabbitMQ deliveries: `'auto'` acks after the inbox commits (and rejects a failed
   * attempt for redelivery) whenever the server consumes with `noAck: false`; `true` / `false`
   * force it. Default: the module's `inbox.acknowledge` (`'auto'`). Ignored for other transports.
   */
  acknowledge?: InboxAcknowledge;
}
