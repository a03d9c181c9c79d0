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
   * again later. May be called again for a message already published (at-least-once).
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
}

/** DI token of the app's `OutboxPublisher` provider. */
export const OutboxPublisher = Symbol('OutboxPublisher');
