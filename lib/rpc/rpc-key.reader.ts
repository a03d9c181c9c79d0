import type { ConsumedMessage } from '../inbox/inbox.interfaces';
import { messageHeader } from '../inbox/message-id.extractor';

/**
 * Every value of a header the transport carries with a request (RabbitMQ message properties'
 * headers, NATS headers, Kafka headers, MQTT 5 user properties), case-insensitively; empty when
 * the transport has no headers (TCP, Redis) or the request has none.
 */
export function rpcHeaderValues(context: unknown, name: string): string[] {
  const ctx = context as Record<string, any> | undefined;
  // NATS headers may repeat a name: every value counts, so that two keys are refused, not one picked.
  if (ctx && typeof ctx.getSubject === 'function' && typeof ctx.getHeaders === 'function') {
    const headers = ctx.getHeaders();
    if (headers && typeof headers.keys === 'function' && typeof headers.values === 'function') {
      const lower = name.toLowerCase();
      const out: string[] = [];
      for (const k of headers.keys() as string[]) {
        if (k.toLowerCase() === lower) out.push(...(headers.values(k) as string[]));
      }
      return out;
    }
  }
  // Only the transport's headers: a `headers` field of the payload is the caller's data.
  const message: ConsumedMessage = { kind: 'rpc', data: undefined, context, args: [] };
  const value = ctx && typeof ctx === 'object' ? messageHeader(message, name) : undefined;
  return value === undefined ? [] : [value];
}
