import type { InboxAcknowledge } from './inbox.options';
import type { ConsumedMessage } from './inbox.interfaces';
import type { InboxRetryTimers } from './inbox-retry.timers';

/**
 * How a failed attempt of a message comes back:
 * - `transport`: the transport redelivers; {@link InboxDelivery.retryAfter} hands the delivery back
 *   so that it arrives again after the delay (RabbitMQ: held unacknowledged, then requeued);
 * - `in-place`: the transport never redelivers (core NATS events, a RabbitMQ `noAck: true`
 *   consumer, Redis, MQTT): the inbox runs the handler again in the same delivery after the delay;
 * - `sender`: the error goes back at once to whoever handed the message over (a request's
 *   requester, the in-process emitter, the relay on an in-process transport), which retries.
 */
export type InboxRetryMode = 'transport' | 'in-place' | 'sender';

/**
 * One delivery as a transport lets the inbox settle it. A transport with consumer-side
 * settlement (RabbitMQ manual ack, Kafka offsets, Service Bus peek-lock) implements it with its
 * own delayed redelivery; the rules every implementation keeps:
 * - `ack()` only after the inbox's outcome committed (processed, duplicate, recorded failed);
 * - `retryAfter()` must not lose the message when the process dies before the delay is over (the
 *   delivery stays with the broker until it is requeued, or a copy is scheduled before the
 *   original is settled);
 * - settling never throws (a closed channel is logged: the broker redelivers).
 */
export interface InboxDelivery {
  readonly retryMode: InboxRetryMode;
  /** The outcome committed: the transport may forget the message. */
  ack(): void;
  /** The message can never succeed (no id; recorded failed under `onMaxAttempts: 'rethrow'`): dead-letter or drop it. */
  reject(): void;
  /**
   * A failed attempt was counted (`retryMode: 'transport'`): make the transport deliver the
   * message again in about `delayMs`, using `timers` for anything held in this process (on
   * shutdown it stops every timer and runs its `abandon` instead).
   */
  retryAfter(delayMs: number, timers: InboxRetryTimers): void;
}

/** What a {@link InboxDeliverySource} gets to recognise its transport's deliveries. */
export interface InboxDeliveryRequest {
  message: ConsumedMessage;
  consumer: string;
  /** The consumer's `acknowledge` option (RabbitMQ), before the module default. */
  acknowledge: InboxAcknowledge | undefined;
  /** `event` for `@EventPattern` / in-process listeners, `message` for `@MessagePattern` (a requester waits). */
  handlerKind: 'event' | 'message';
}

/**
 * Recognises one transport's deliveries (RabbitMQ built in; a Kafka or Service Bus
 * acknowledger implements the same and is added to `InboxDeliveries`). Returns undefined for a
 * message that is not its transport's, or that it must leave alone (`acknowledge: false`).
 */
export interface InboxDeliverySource {
  deliveryOf(request: InboxDeliveryRequest): InboxDelivery | undefined;
}
