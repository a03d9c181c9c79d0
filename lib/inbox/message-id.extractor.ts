import { MESSAGE_ID_HEADER } from './inbox.constants';
import type { ConsumedMessage } from './inbox.interfaces';

/** Where {@link defaultMessageId} looks, for the "no message id" error. */
export const DEFAULT_MESSAGE_ID_SOURCES =
  `the RabbitMQ messageId property and the "${MESSAGE_ID_HEADER}" header (RabbitMQ, NATS, Kafka, MQTT 5 user property), ` +
  `then a "messageId" field of the payload`;

const text = (v: unknown): string | undefined => {
  if (v === undefined || v === null) return undefined;
  if (Buffer.isBuffer(v)) return v.toString('utf8') || undefined;
  if (Array.isArray(v)) return text(v[0]);
  if (typeof v === 'string') return v || undefined;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  return undefined;
};

/** Case-insensitive lookup in a plain header object. */
const header = (headers: unknown, name: string): string | undefined => {
  if (!headers || typeof headers !== 'object') return undefined;
  const h = headers as Record<string, unknown>;
  if (name in h) return text(h[name]);
  const lower = name.toLowerCase();
  for (const k of Object.keys(h)) if (k.toLowerCase() === lower) return text(h[k]);
  return undefined;
};

/**
 * The message id the transport carries, read from its Nest context (duck-typed, so
 * `@nestjs/microservices` stays optional):
 * - RabbitMQ (`RmqContext`): the `messageId` property, else the `message-id` header;
 * - NATS (`NatsContext`): the `message-id` header, else `Nats-Msg-Id` (JetStream de-duplication);
 * - Kafka (`KafkaContext`): the `message-id` header;
 * - MQTT 5 (`MqttContext`): the `message-id` user property.
 */
export function transportMessageId(context: unknown): string | undefined {
  if (!context || typeof context !== 'object') return undefined;
  const ctx = context as Record<string, any>;
  // RabbitMQ: RmqContext#getMessage() is the amqplib message (fields, properties, content).
  if (typeof ctx.getChannelRef === 'function' && typeof ctx.getMessage === 'function') {
    const props = ctx.getMessage()?.properties;
    return text(props?.messageId) ?? header(props?.headers, MESSAGE_ID_HEADER);
  }
  // NATS: NatsContext#getHeaders() is a MsgHdrs (get(name)) or undefined.
  if (typeof ctx.getSubject === 'function' && typeof ctx.getHeaders === 'function') {
    const headers = ctx.getHeaders();
    if (headers && typeof headers.get === 'function') {
      return text(headers.get(MESSAGE_ID_HEADER)) ?? text(headers.get('Nats-Msg-Id'));
    }
    return header(headers, MESSAGE_ID_HEADER);
  }
  // Kafka: KafkaContext#getMessage() is the KafkaMessage (headers: Buffer values).
  if (typeof ctx.getPartition === 'function' && typeof ctx.getMessage === 'function') {
    return header(ctx.getMessage()?.headers, MESSAGE_ID_HEADER);
  }
  // MQTT 5: MqttContext#getPacket().properties.userProperties.
  if (typeof ctx.getPacket === 'function') {
    return header(ctx.getPacket()?.properties?.userProperties, MESSAGE_ID_HEADER);
  }
  return undefined;
}

/** A `messageId` field of the payload (an envelope), if it is a string or number. */
export function payloadMessageId(data: unknown): string | undefined {
  if (!data || typeof data !== 'object' || Buffer.isBuffer(data)) return undefined;
  const d = data as Record<string, unknown>;
  return text(d.messageId) ?? header(d.headers, MESSAGE_ID_HEADER);
}

/**
 * The default extractor of `@IdempotentConsumer()`: the id the outbox relay sent, which is also
 * the transport's own message id (see {@link transportMessageId}), else a `messageId` field (or a
 * `message-id` entry of a `headers` field) of the payload, which is how an in-process listener
 * receives it.
 */
export function defaultMessageId(message: ConsumedMessage): string | undefined {
  return transportMessageId(message.context) ?? payloadMessageId(message.data);
}

/**
 * A header of a consumed message, from the same places as the message id: the transport's
 * headers (RabbitMQ AMQP headers, NATS headers, Kafka headers, MQTT 5 user properties, the sample
 * app's embedded context), else a `headers` field of the payload (an in-process listener of
 * the outbox message, an envelope). The inbox reads the trace context (`traceparent`) with it.
 */
export function messageHeader(message: ConsumedMessage, name: string): string | undefined {
  const ctx = message.context as Record<string, any> | undefined;
  if (ctx && typeof ctx === 'object') {
    if (typeof ctx.getChannelRef === 'function' && typeof ctx.getMessage === 'function') {
      return header(ctx.getMessage()?.properties?.headers, name);
    }
    if (typeof ctx.getSubject === 'function' && typeof ctx.getHeaders === 'function') {
      const headers = ctx.getHeaders();
      if (headers && typeof headers.get === 'function') return text(headers.get(name));
      return header(headers, name);
    }
    if (typeof ctx.getPartition === 'function' && typeof ctx.getMessage === 'function') {
      return header(ctx.getMessage()?.headers, name);
    }
    if (typeof ctx.getPacket === 'function') {
      return header(ctx.getPacket()?.properties?.userProperties, name);
    }
  }
  const data = message.data;
  if (!data || typeof data !== 'object' || Buffer.isBuffer(data)) return undefined;
  return header((data as Record<string, unknown>).headers, name);
}

/** OpenTelemetry's `messaging.system` of a Nest transport context (by its class), if known. */
export function messagingSystemOf(context: unknown): string | undefined {
  const name = (context as object | undefined)?.constructor?.name;
  return name ? CONTEXT_SYSTEMS[name] : undefined;
}

const CONTEXT_SYSTEMS: Readonly<Record<string, string>> = {
  RmqContext: 'rabbitmq',
  NatsContext: 'nats',
  KafkaContext: 'kafka',
  MqttContext: 'mqtt',
};
