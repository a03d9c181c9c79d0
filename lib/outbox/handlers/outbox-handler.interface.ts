import type { OutboxMessage } from '../outbox-message.interface';

/** The second argument of an `@OnOutboxMessage()` method. */
export interface OutboxHandlerContext<TPayload = unknown> {
  /** The message (id, type, headers, partition key, attempts so far). */
  readonly message: OutboxMessage<TPayload>;
  /**
   * Aborted when the application shuts down: stop early (pass it to `fetch`, timers, …) and
   * throw; the transaction rolls back and the message is given back without counting an attempt.
   */
  readonly signal: AbortSignal;
  /** The handler's name (its inbox consumer name). */
  readonly handler: string;
}

/** One discovered handler. @internal */
export interface OutboxHandlerEntry {
  /** Inbox consumer name. */
  name: string;
  run(payload: unknown, context: OutboxHandlerContext): unknown;
}
