import { UseInterceptors } from '@nestjs/common';
import { IDEMPOTENT_CONSUMER_METADATA, INBOX_HANDLED } from './inbox.constants';
import { consumeMessage, type IdempotentConsumerDefinition } from './inbox-consumer';
import type { ConsumedMessage, IdempotentConsumerOptions } from './inbox.interfaces';
import { handlerKindOf, InboxInterceptor } from './inbox.interceptor';
import { NO_INBOX_SERVICE } from './inbox.messages';
import { runningInboxService } from './inbox.registry';

/** A Nest RPC context among the arguments (a handler that declared `@Ctx()`). */
const isRpcContext = (a: unknown): boolean =>
  !!a &&
  typeof a === 'object' &&
  typeof (a as any).getArgs === 'function' &&
  typeof (a as any).getArgByIndex === 'function';

/** Copies Reflect metadata (e.g. `@OnEvent`, `@EventPattern`, `@UseInterceptors`) to the wrapper. */
function copyMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}

/**
 * Makes a message handler idempotent through the inbox: the message id (from the message, see
 * `messageId`) is recorded in the same transaction as the handler's writes, so a redelivered
 * message runs the handler at most once per consumer, with exactly-once effects.
 *
 * Works on Nest microservices handlers (`@EventPattern`, `@MessagePattern`: through
 * {@link InboxInterceptor}, which sees the transport's context) and on in-process listeners
 * (`@OnEvent` of @nestjs/event-emitter, any method called directly: through a wrapper of the
 * method, since interceptors do not run there). Decorator order does not matter.
 *
 * The handler writes through `TransactionHost.tx` to join the transaction. It returns the
 * handler's result, or undefined when the handler did not run (duplicate, recorded failed).
 * A message without an id is refused with `InboxMessageIdMissingError`.
 */
export function IdempotentConsumer(options: IdempotentConsumerOptions = {}): MethodDecorator {
  return (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
    const original = descriptor.value;
    if (typeof original !== 'function') {
      throw new TypeError('@IdempotentConsumer() decorates methods only.');
    }
    const className = (target as any).constructor?.name ?? 'Anonymous';
    const def: IdempotentConsumerDefinition = {
      consumer: options.consumer ?? `${className}.${String(key)}`,
      options,
    };

    const wrapped = function (this: unknown, ...args: unknown[]): Promise<unknown> {
      if (INBOX_HANDLED.getStore() === wrapped) {
        return INBOX_HANDLED.exit(() => Promise.resolve(original.apply(this, args)));
      }
      const inbox = runningInboxService();
      if (!inbox) return Promise.reject(new Error(NO_INBOX_SERVICE(def.consumer)));
      const message: ConsumedMessage = {
        kind: 'event',
        data: args[0],
        context: args.find(isRpcContext),
        args,
      };
      return consumeMessage(
        inbox,
        def,
        message,
        async () => original.apply(this, args),
        handlerKindOf(wrapped),
      );
    };
    Object.defineProperty(wrapped, 'name', { value: original.name, configurable: true });
    copyMetadata(original, wrapped);
    Reflect.defineMetadata(IDEMPOTENT_CONSUMER_METADATA, def, wrapped);
    descriptor.value = wrapped;
    UseInterceptors(InboxInterceptor)(target, key, descriptor);
    return descriptor;
  };
}
