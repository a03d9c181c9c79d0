import type { OutboxMessage } from '../outbox-message.interface';
import type { OutboxPublisher } from '../outbox-publisher.interface';
import { isConnectionError } from '../outbox-unavailable';

/** Options of `FunctionPublisher`: the messaging system its spans name, and which errors mean the broker is unreachable. */
export interface FunctionPublisherOptions {
  /** OpenTelemetry's `messaging.system` of the relay's spans. */
  messagingSystem?: string;
  /**
   * Classifies an error the function threw: `true` when the target could not be reached (no
   * attempt is counted, the relay backs off as a whole), `false` when the message was refused,
   * `undefined` for the default `isConnectionError()` (socket codes such as ECONNREFUSED,
   * ECONNRESET, ETIMEDOUT, ENOTFOUND, and the usual broker clients' connection errors). The
   * function may also throw `PublisherUnavailableError` itself.
   */
  isUnavailable?: (error: Error) => boolean | undefined;
}

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
    private readonly options: FunctionPublisherOptions = {},
  ) {
    this.messagingSystem = options.messagingSystem;
  }

  /** Whether a failed call was the target being unreachable (see {@link FunctionPublisherOptions.isUnavailable}). */
  isUnavailable(error: Error): boolean {
    return this.options.isUnavailable?.(error) ?? isConnectionError(error);
  }

  /** OpenTelemetry's `messaging.system` of the relay's spans (the `messagingSystem` option). */
  readonly messagingSystem: string | undefined;

  async publish(message: OutboxMessage): Promise<void> {
    await this.fn(message);
  }
}
