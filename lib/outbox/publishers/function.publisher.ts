import type { OutboxMessage } from '../outbox-message.interface';
import type { OutboxPublisher } from '../outbox-publisher.interface';

/**
 * A publisher from a plain function, for anything that has no adapter: an HTTP webhook, an
 * in-process event bus, a test recorder. The function must resolve only once the message is
 * safely handed over, and throw (reject) when it was not.
 *
 * ```ts
 * new FunctionPublisher((m) => eventEmitter.emitAsync(m.type, m.payload, m))
 * ```
 * The message's `headers` carry the trace context of the relay's `send` span (`traceparent`,
 * with an OpenTelemetry SDK): pass them on so the consumer continues the trace.
 */
export class FunctionPublisher implements OutboxPublisher {
  constructor(
    private readonly fn: (message: OutboxMessage) => unknown,
    options: { messagingSystem?: string } = {},
  ) {
    this.messagingSystem = options.messagingSystem;
  }

  /** OpenTelemetry's `messaging.system` of the relay's spans (the `messagingSystem` option). */
  readonly messagingSystem: string | undefined;

  async publish(message: OutboxMessage): Promise<void> {
    await this.fn(message);
  }
}
