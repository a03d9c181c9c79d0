import { MANAGER_NOT_IN_TRANSACTION, TRANSACTION_REQUIRED } from './outbox.messages';

/**
 * `OutboxService.add()` was called with no ambient transaction and no EntityManager of an open
 * transaction: the row would not commit or roll back with the business data.
 */
export class OutboxTransactionRequiredError extends Error {
  constructor(managerGiven = false) {
    super(managerGiven ? MANAGER_NOT_IN_TRANSACTION : TRANSACTION_REQUIRED);
    this.name = 'OutboxTransactionRequiredError';
  }
}

/** An event given to `OutboxService.add()` cannot be stored (nothing of the call was written). */
export class InvalidOutboxEventError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidOutboxEventError';
  }
}

/** A publisher did not confirm a message in `outbox.publishTimeoutMs`. */
export class OutboxPublishTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboxPublishTimeoutError';
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
export class PublisherUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PublisherUnavailableError';
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
    this.name = 'OutboxRouteError';
  }
}

/** A message reached the in-process publisher but no `@OnOutboxMessage()` handler has its type. */
export class NoOutboxHandlerError extends Error {
  constructor(
    message: string,
    readonly messageType: string,
  ) {
    super(message);
    this.name = 'NoOutboxHandlerError';
  }
}
