import type { OutboxMessage } from './outbox-message.interface';

/**
 * The port through which the relay publishes. Adapters: `ClientProxyPublisher` (Nest
 * microservices: RabbitMQ, NATS, Kafka, Redis, MQTT), `ServiceBusPublisher` (Azure Service
 * Bus), `FunctionPublisher` (anything else). Provide one with the `outbox.publisher` module
 * option, or register a provider for the `OutboxPublisher` token anywhere in the app:
 * `{ provide: OutboxPublisher, useFactory: (client) => new ClientProxyPublisher(client), inject: [...] }`.
 */
export interface OutboxPublisher {
  /**
   * Publishes one message and resolves once the broker has confirmed it (publisher confirm,
   * flush, ack). Rejects when it was not accepted: the relay counts a failed attempt and tries
   * again later, unless the error says the broker was unreachable (see `isUnavailable`). May be
   * called again for a message already published (at-least-once).
   */
  publish(message: OutboxMessage): Promise<void>;
  /**
   * Optional: publishes a whole claimed batch at once. Resolves with one outcome per message, in
   * the same order: `undefined` when confirmed, an Error when not. Without it the relay calls
   * `publish()` for every message of the batch concurrently.
   */
  publishBatch?(messages: readonly OutboxMessage[]): Promise<ReadonlyArray<Error | undefined>>;
  /**
   * Optional: the broker, as OpenTelemetry's `messaging.system` of the relay's `send` spans
   * (`rabbitmq`, `nats`, `kafka`, `servicebus`, …). Left out when unknown.
   */
  readonly messagingSystem?: string;
  /**
   * Optional: whether a failed publish means the broker could not be reached (connection refused
   * or lost, the client reconnecting, a channel closed with its connection) rather than that this
   * message was refused. Called with each error of a failed publish, and with the relay's
   * `OutboxPublishTimeoutError` when the broker did not confirm in `outbox.publishTimeoutMs`.
   * `true`: no attempt is counted; the message is given back unpublished and the relay backs off
   * as a whole until the broker answers again. `false`: a failed attempt of the message (dead
   * after `outbox.maxAttempts`). Without it the relay uses `isConnectionError()` (socket codes and
   * the usual broker clients' connection errors). Throwing `PublisherUnavailableError` from
   * `publish()` always means unavailable.
   */
  isUnavailable?(error: Error): boolean;
}

/** DI token of the app's `OutboxPublisher` provider. */
export const OutboxPublisher = Symbol('OutboxPublisher');
