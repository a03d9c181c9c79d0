import { ExactlyOnceError } from '../errors/exactly-once.error';
import {
  DEAD_FILTER_REQUIRED,
  MANAGER_NOT_IN_TRANSACTION,
  TRANSACTION_REQUIRED,
} from './outbox.messages';

/**
 * `OutboxService.add()` was called with no ambient transaction and no EntityManager of an open
 * transaction: the row would not commit or roll back with the business data.
 */
export class OutboxTransactionRequiredError extends ExactlyOnceError {
  readonly code = 'OUTBOX_TRANSACTION_REQUIRED';

  /** @param managerGiven an EntityManager was given, but it is not in a transaction. */
  constructor(readonly managerGiven = false) {
    super(managerGiven ? MANAGER_NOT_IN_TRANSACTION : TRANSACTION_REQUIRED);
  }
}

/** An event given to `OutboxService.add()` cannot be stored (nothing of the call was written). */
export class InvalidOutboxEventError extends ExactlyOnceError {
  readonly code = 'OUTBOX_EVENT_INVALID';

  /**
   * @param index the event's position in the `add()` call.
   * @param reason what is wrong with it.
   */
  constructor(
    message: string,
    readonly index?: number,
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** A publisher did not confirm a message in `outbox.publishTimeoutMs`. */
export class OutboxPublishTimeoutError extends ExactlyOnceError {
  readonly code = 'OUTBOX_PUBLISH_TIMEOUT';

  /** @param timeoutMs the `outbox.publishTimeoutMs` that passed. */
  constructor(
    message: string,
    readonly timeoutMs?: number,
  ) {
    super(message);
  }
}

/**
 * A publisher could not reach its broker (connection refused, lost or closed, channel closed
 * with the connection, the client reconnecting): the publish failed for every message alike, so
 * it is no attempt of the message. The relay gives the message back unpublished (its attempts
 * unchanged), backs off as a whole and tries again. Throw it (or return it from `publishBatch`)
 * from a custom publisher, with the original error as `cause`; or implement
 * `OutboxPublisher.isUnavailable()` to classify errors you do not throw yourself.
 */
export class PublisherUnavailableError extends ExactlyOnceError {
  readonly code = 'OUTBOX_PUBLISHER_UNAVAILABLE';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * Throw it from a publisher (or an in-process handler) for a message that can never succeed
 * (invalid for the broker, a bug in its payload): the relay makes it dead at once, after this one
 * attempt, without retries and whatever `outbox.retryIf` says. Requeue it from the admin once
 * fixed. Pass the original error as `cause`.
 */
export class NonRetryableError extends ExactlyOnceError {
  readonly code = 'OUTBOX_NON_RETRYABLE';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A filtered requeue or purge of dead letters was asked with no criterion (type, partition key,
 * failed before/after, error text) and without `all: true`, or with an invalid one.
 */
export class OutboxDeadFilterRequiredError extends ExactlyOnceError {
  readonly code = 'OUTBOX_DEAD_FILTER_REQUIRED';

  constructor(detail: string = DEAD_FILTER_REQUIRED) {
    super(detail);
  }
}

/**
 * `outbox.route` sent an event to a publisher that is not configured (or threw): the `add()`
 * call wrote nothing.
 */
export class OutboxRouteError extends InvalidOutboxEventError {
  constructor(
    message: string,
    /** What the route function returned (undefined when it threw). */
    readonly route: unknown,
  ) {
    super(message);
  }
}

/** A message reached the in-process publisher but no `@OnOutboxMessage()` handler has its type. */
export class NoOutboxHandlerError extends ExactlyOnceError {
  readonly code = 'OUTBOX_NO_HANDLER';

  constructor(
    message: string,
    readonly messageType: string,
  ) {
    super(message);
  }
}
