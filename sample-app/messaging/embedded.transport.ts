import { BaseRpcContext, type CustomTransportStrategy, Server } from '@nestjs/microservices';
import type { EventEmitter2 } from '@nestjs/event-emitter';
import { isObservable, lastValueFrom } from 'rxjs';
import type { OutboxMessage } from '../../lib';

/** Transport id of the embedded transport (for `@EventPattern(pattern, EMBEDDED_TRANSPORT)` when several transports run). */
export const EMBEDDED_TRANSPORT = Symbol('EmbeddedTransport');

/**
 * The context an `@EventPattern()` handler gets on the embedded transport (`@Ctx()`). Like
 * NatsContext it has `getSubject()` and `getHeaders()` (a Map: `get('message-id')`), so
 * code written for NATS reads it the same way.
 */
export class EmbeddedContext extends BaseRpcContext<[OutboxMessage]> {
  /** The published outbox message (id, type, headers, partition key, payload). */
  getMessage(): OutboxMessage {
    return this.args[0];
  }
  /** The pattern (event type). */
  getSubject(): string {
    return this.args[0].type;
  }
  getHeaders(): ReadonlyMap<string, string> {
    return new Map(Object.entries(this.args[0].headers));
  }
  getMessageId(): string {
    return this.args[0].id;
  }
  getPartitionKey(): string | null {
    return this.args[0].partitionKey;
  }
}

/**
 * The embedded default transport: a Nest microservices transport strategy over the app's
 * EventEmitter2, so the same `@EventPattern('payment.captured')` handlers run with no broker
 * and on RabbitMQ or NATS. The outbox relay publishes with `emitter.emitAsync(type, message)`;
 * delivery resolves when every handler of the pattern has finished and rejects when one threw,
 * so a failing handler makes the relay retry the message later (as a broker would redeliver).
 */
export class EmbeddedTransport extends Server implements CustomTransportStrategy {
  private readonly subscriptions: Array<[string, (message: OutboxMessage) => Promise<void>]> = [];

  constructor(private readonly emitter: EventEmitter2) {
    super();
    this.transportId = EMBEDDED_TRANSPORT;
  }

  listen(callback: (...optionalParams: unknown[]) => void): void {
    for (const pattern of this.messageHandlers.keys()) {
      const listener = (message: OutboxMessage) => this.deliver(pattern, message);
      this.emitter.on(pattern, listener);
      this.subscriptions.push([pattern, listener]);
    }
    callback();
  }

  close(): void {
    for (const [pattern, listener] of this.subscriptions.splice(0))
      this.emitter.off(pattern, listener);
  }

  on(): void {
    // No transport-level events (connect/disconnect) in process.
  }

  unwrap<T>(): T {
    return this.emitter as T;
  }

  private async deliver(pattern: string, message: OutboxMessage): Promise<void> {
    const handler = this.getHandlerByPattern(pattern);
    if (!handler) return;
    try {
      const result = await handler(message.payload, new EmbeddedContext([message]));
      if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
    } catch (e) {
      // Nest's RPC exception filter turns a handler's error into `{ status, message }`.
      if (e instanceof Error) throw e;
      throw new Error(`a consumer of ${pattern} failed: ${JSON.stringify(e)}`);
    }
  }
}
