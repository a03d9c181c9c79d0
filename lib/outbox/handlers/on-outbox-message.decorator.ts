import { SetMetadata } from '@nestjs/common';

/** Metadata key of `@OnOutboxMessage()`. @internal */
export const OUTBOX_HANDLER_METADATA = 'nestjs-exactly-once:outbox-handler';

/** Options of `@OnOutboxMessage(type, options)`. */
export interface OnOutboxMessageOptions {
  /**
   * The handler's name: the inbox de-duplicates by (name, message id), so it must stay the same
   * across deploys and be unique in the app. Default: `ClassName.methodName`. At most 200 characters.
   */
  name?: string;
}

/** What `@OnOutboxMessage()` stores on a method. @internal */
export interface OutboxHandlerMetadata {
  types: string[];
  name?: string;
}

/**
 * Runs the method for every committed outbox message of `type` (one type or several), through the
 * in-process publisher (`inProcessPublisher()`): the database transport of a modular monolith,
 * no broker. Each handler runs in its own transaction together with its inbox record, keyed by
 * (handler name, message id): its effects commit once per message, however often the relay
 * delivers it (a retry after another handler of the type failed, a relay that crashed after the
 * commit). The method gets the payload and an {@link OutboxHandlerContext} (the message and an
 * `AbortSignal` aborted when the app shuts down). Throwing rolls its transaction back: the
 * relay retries the message with its backoff and it becomes dead after `outbox.maxAttempts`.
 *
 * ```ts
 * @OnOutboxMessage('payment.created')
 * async onPaymentCreated(payload: PaymentCreated, { signal }: OutboxHandlerContext) { … }
 * ```
 */
export const OnOutboxMessage = (
  type: string | readonly string[],
  options: OnOutboxMessageOptions = {},
): MethodDecorator =>
  SetMetadata<string, OutboxHandlerMetadata>(OUTBOX_HANDLER_METADATA, {
    types: typeof type === 'string' ? [type] : [...type],
    name: options.name,
  });
