import { Injectable } from '@nestjs/common';
import type { InboxAcknowledge } from '../idempotency.options';
import { RpcServerFollower } from './rpc-server.follower';
import { ACK_FAILED, ACK_MODE_UNKNOWN, ACK_ON_AUTO_ACK_CONSUMER } from './inbox.messages';
import type {
  InboxDelivery,
  InboxDeliveryRequest,
  InboxDeliverySource,
} from './inbox-delivery.interface';
import { IN_PLACE_RETRY } from './in-place-retry.source';

/** A RabbitMQ delivery as Nest's RmqContext holds it: the amqplib channel and message. */
export interface RmqDelivery {
  channel: {
    ack(message: unknown): void;
    nack(message: unknown, all?: boolean, requeue?: boolean): void;
  };
  message: unknown;
}

/** The RabbitMQ delivery of an RmqContext, when the context is one. */
export function rmqDelivery(context: unknown): RmqDelivery | undefined {
  const ctx = context as any;
  if (!ctx || typeof ctx.getChannelRef !== 'function' || typeof ctx.getMessage !== 'function') {
    return undefined;
  }
  const channel = ctx.getChannelRef();
  const message = ctx.getMessage();
  return channel && message ? { channel, message } : undefined;
}

/** Nest's ServerRMQ (11 and 12) as far as this file reads it. */
interface RmqServerLike {
  noAck: boolean;
  /** amqp-connection-manager's ChannelWrapper; `_channel` is the amqplib channel it wraps. */
  channel?: { _channel?: unknown } | null;
}

const isRmqServer = (s: unknown): s is RmqServerLike =>
  !!s && typeof s === 'object' && typeof (s as any).noAck === 'boolean';

/**
 * Settles RabbitMQ deliveries of `@IdempotentConsumer()` handlers once the inbox has decided.
 *
 * Whether a delivery needs an ack is the consuming server's `noAck` option: under `noAck: false`
 * (manual acknowledgement) a delivery nobody acks stays unacknowledged until the channel closes,
 * then comes back; under `noAck: true` (Nest's default) RabbitMQ considers it acknowledged on
 * delivery, and an ack closes the channel (406 PRECONDITION_FAILED, unknown delivery tag). The
 * servers come from Nest's RPC target registry (every `connectMicroservice()` /
 * `createMicroservice()` adds its server); a delivery is matched to its server by channel, and
 * when several RabbitMQ servers disagree and none matches, the mode is unknown (warned once).
 *
 * A failed attempt is retried after the inbox's backoff delay by HOLDING the delivery
 * unacknowledged and rejecting it with requeue once the delay is over. The message stays with
 * RabbitMQ meanwhile: a process that dies (or a channel that closes) while holding it gets it
 * redelivered by the broker at once, never lost. On a `noAck: true` server RabbitMQ never
 * redelivers, so the inbox retries event handlers in place.
 * @internal
 */
@Injectable()
export class RmqDeliveryAcknowledger
  extends RpcServerFollower<RmqServerLike>
  implements InboxDeliverySource
{
  private readonly warned = new Set<string>();

  protected isServer(target: unknown): target is RmqServerLike {
    return isRmqServer(target);
  }

  /**
   * The delivery this consumer must ack or reject itself, or undefined when there is none to
   * settle (another transport, an auto-ack consumer, `acknowledge: false`).
   */
  manualDelivery(
    context: unknown,
    consumer: string,
    acknowledge: InboxAcknowledge | undefined,
  ): RmqDelivery | undefined {
    const mode = acknowledge ?? this.options.inbox.acknowledge;
    if (mode === false) return undefined;
    const delivery = rmqDelivery(context);
    if (!delivery) return undefined;
    const noAck = this.noAckOf(delivery);
    if (noAck === true) {
      if (mode === true) this.warnOnce(`auto:${consumer}`, ACK_ON_AUTO_ACK_CONSUMER(consumer));
      return undefined;
    }
    if (noAck === false || mode === true) return delivery;
    this.warnOnce(`unknown:${consumer}`, ACK_MODE_UNKNOWN(consumer));
    return undefined;
  }

  /** The RabbitMQ delivery of a consumed message as the inbox settles it (see the class comment). */
  deliveryOf(request: InboxDeliveryRequest): InboxDelivery | undefined {
    const { message, consumer, acknowledge } = request;
    const rmq = rmqDelivery(message.context);
    if (!rmq) return undefined;
    const manual = this.manualDelivery(message.context, consumer, acknowledge);
    if (manual) {
      return {
        retryMode: 'transport',
        ack: () => this.ack(manual, consumer),
        reject: () => this.reject(manual, consumer, false),
        retryAfter: (delayMs, timers) =>
          timers.later(delayMs, () => this.reject(manual, consumer, true)),
      };
    }
    const mode = acknowledge ?? this.options.inbox.acknowledge;
    if (mode !== false && request.handlerKind === 'event' && this.noAckOf(rmq) === true) {
      return IN_PLACE_RETRY;
    }
    return undefined;
  }

  /** Acknowledges a delivery whose outcome committed (processed, duplicate, recorded failed). */
  ack(delivery: RmqDelivery, consumer: string): void {
    this.settle(() => delivery.channel.ack(delivery.message), consumer);
  }

  /** Rejects a delivery: back to the queue (`requeue`), or dead-lettered / dropped by the broker. */
  reject(delivery: RmqDelivery, consumer: string, requeue: boolean): void {
    this.settle(() => delivery.channel.nack(delivery.message, false, requeue), consumer);
  }

  /** The consuming server's `noAck`, or undefined when it cannot be told. */
  protected noAckOf(delivery: RmqDelivery): boolean | undefined {
    const own = this.servers.find((s) => s.channel?._channel === delivery.channel);
    if (own) return own.noAck;
    const modes = new Set(this.servers.map((s) => s.noAck));
    return modes.size === 1 ? [...modes][0] : undefined;
  }

  private settle(fn: () => void, consumer: string): void {
    try {
      fn();
    } catch (e) {
      // The channel closed under the handler: the broker redelivers, and the inbox settles the copy.
      this.logger.warn(ACK_FAILED(consumer, e));
    }
  }

  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn(message);
  }
}
