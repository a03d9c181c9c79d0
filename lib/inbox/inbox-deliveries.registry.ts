import { Injectable } from '@nestjs/common';
import type {
  InboxDelivery,
  InboxDeliveryRequest,
  InboxDeliverySource,
} from './inbox-delivery.interface';
import { InPlaceRetrySource } from './in-place-retry.source';
import { InboxRetryTimers } from './inbox-retry.timers';
import { RmqDeliveryAcknowledger } from './rmq-delivery.acknowledger';

/** No transport claims the delivery: the error goes back to the sender at once. */
const SENDER_RETRIES: InboxDelivery = Object.freeze({
  retryMode: 'sender' as const,
  ack: () => undefined,
  reject: () => undefined,
  retryAfter: () => undefined,
});

/**
 * The transports' delivery sources, asked in order; the first that recognises a message settles
 * it. RabbitMQ first, then the at-most-once transports (in-place retries); anything else
 * (embedded/custom transports, `@OnEvent`, requests) rethrows to its sender. A transport
 * acknowledger (Kafka, Service Bus) joins with {@link InboxDeliveries.add}.
 * @internal
 */
@Injectable()
export class InboxDeliveries {
  private readonly sources: InboxDeliverySource[];

  constructor(
    rmq: RmqDeliveryAcknowledger,
    /** Delays held in this process (RabbitMQ deliveries waiting to be requeued, in-place waits). */
    readonly timers: InboxRetryTimers,
  ) {
    this.sources = [rmq, new InPlaceRetrySource()];
  }

  /** Adds a transport's source, asked before the built-in fallbacks. */
  add(source: InboxDeliverySource): void {
    this.sources.splice(this.sources.length - 1, 0, source);
  }

  /** The delivery of a consumed message, as its transport settles it. */
  deliveryOf(request: InboxDeliveryRequest): InboxDelivery {
    for (const source of this.sources) {
      const delivery = source.deliveryOf(request);
      if (delivery) return delivery;
    }
    return SENDER_RETRIES;
  }
}
