import { OUTBOX_HEADERS } from '../../lib';

/** An event as any of the sample app's transports delivered it, normalized. */
export interface IncomingMessage<TPayload = unknown> {
  id: string | undefined;
  type: string | undefined;
  partitionKey: string | undefined;
  headers: Record<string, string>;
  payload: TPayload;
}

/**
 * Reads the message id, type, partition key and headers of an event from the handler's data and
 * context, on RabbitMQ (RmqContext: AMQP `messageId`
 * property and headers), NATS (NatsContext: NATS headers) and Kafka
 * (KafkaContext: record headers).
 */
export function incomingMessage<TPayload = unknown>(
  data: TPayload,
  context: unknown,
): IncomingMessage<TPayload> {
  const headers = headersOf(context);
  let id: string | undefined = headers[OUTBOX_HEADERS.messageId];
  const rmq = context as {
    getMessage?: () => { properties?: { messageId?: string } };
    getChannelRef?: unknown;
  };
  if (!id && typeof rmq?.getChannelRef === 'function') {
    id = rmq.getMessage?.()?.properties?.messageId;
  }
  return {
    id,
    type: headers[OUTBOX_HEADERS.type],
    partitionKey: headers[OUTBOX_HEADERS.partitionKey],
    headers,
    payload: data,
  };
}

function headersOf(context: unknown): Record<string, string> {
  const ctx = context as Record<string, any> | undefined;
  if (ctx && typeof ctx.getChannelRef === 'function' && typeof ctx.getMessage === 'function') {
    const raw = ctx.getMessage()?.properties?.headers ?? {};
    return Object.fromEntries(
      Object.entries(raw).map(([k, v]) => [
        k.toLowerCase(),
        Buffer.isBuffer(v) ? v.toString('utf8') : String(v),
      ]),
    );
  }
  if (ctx && typeof ctx.getSubject === 'function' && typeof ctx.getHeaders === 'function') {
    const h = ctx.getHeaders();
    const out: Record<string, string> = {};
    if (h && typeof h.keys === 'function') {
      for (const k of h.keys()) out[String(k).toLowerCase()] = String(h.get(k));
    }
    return out;
  }
  // Kafka (KafkaContext): ServerKafka's parser has decoded the record headers to strings.
  if (ctx && typeof ctx.getPartition === 'function' && typeof ctx.getMessage === 'function') {
    const raw: Record<string, unknown> = ctx.getMessage()?.headers ?? {};
    return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k.toLowerCase(), String(v)]));
  }
  return {};
}
