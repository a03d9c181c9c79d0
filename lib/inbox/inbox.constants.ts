import { AsyncLocalStorage } from 'node:async_hooks';

/** @internal Metadata key written by `@IdempotentConsumer()` on the wrapped method. */
export const IDEMPOTENT_CONSUMER_METADATA = 'IDEMPOTENCY:INBOX_CONSUMER';

/**
 * @internal Set by the interceptor around the handler it already runs through the inbox, so the
 * method wrapper of that same handler passes through instead of recording the message twice.
 */
export const INBOX_HANDLED = new AsyncLocalStorage<object>();

/** Header under which the outbox relay and publishers carry the message id. */
export const MESSAGE_ID_HEADER = 'message-id';
/** Header under which the outbox relay carries the message type (the span's destination). */
export const MESSAGE_TYPE_HEADER = 'message-type';
