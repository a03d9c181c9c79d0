import type {
  InboxDelivery,
  InboxDeliveryRequest,
  InboxDeliverySource,
} from './inbox-delivery.interface';

/** A delivery nobody settles and nobody redelivers: the inbox runs the handler again itself. */
export const IN_PLACE_RETRY: InboxDelivery = Object.freeze({
  retryMode: 'in-place' as const,
  ack: () => undefined,
  reject: () => undefined,
  retryAfter: () => undefined,
});

/** Contexts of Nest transports that deliver an event once and never again. */
const AT_MOST_ONCE_CONTEXTS = new Set(['NatsContext', 'RedisContext', 'MqttContext']);

/**
 * Core NATS, Redis pub/sub and MQTT (Nest's servers) hand an event to the handler once: a failed
 * run is never delivered again. For `@EventPattern` handlers the inbox retries in place after
 * its backoff delay, up to `maxAttempts` (a process that dies meanwhile loses the message, as the
 * transport would have). Requests (`@MessagePattern`) answer the error at once: the requester
 * decides whether to ask again.
 * @internal
 */
export class InPlaceRetrySource implements InboxDeliverySource {
  deliveryOf(request: InboxDeliveryRequest): InboxDelivery | undefined {
    if (request.handlerKind !== 'event') return undefined;
    const name = (request.message.context as object | undefined)?.constructor?.name;
    return name && AT_MOST_ONCE_CONTEXTS.has(name) ? IN_PLACE_RETRY : undefined;
  }
}
