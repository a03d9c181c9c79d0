import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { defer, lastValueFrom, Observable } from 'rxjs';
import { MESSAGE_HANDLER, PATTERN_HANDLER_METADATA } from '../rpc/rpc.constants';
import { IDEMPOTENT_CONSUMER_METADATA, INBOX_HANDLED } from './inbox.constants';
import { replyNotStored } from './inbox.errors';
import { consumeMessage, IdempotentConsumerDefinition } from './inbox-consumer';
import type { ConsumedMessage } from './inbox.interfaces';
import { InboxService } from './inbox.service';

/** `message` for `@MessagePattern` handlers (a requester waits for the answer), else `event`. @internal */
export function handlerKindOf(handler: object): 'event' | 'message' {
  // @nestjs/microservices (an optional peer, so not imported): PATTERN_HANDLER_METADATA and
  // PatternHandler.MESSAGE = 1 (EVENT = 2).
  return Reflect.getMetadata('microservices:handler_type', handler) === 1 ? 'message' : 'event';
}

/**
 * Runs `@IdempotentConsumer()` handlers of Nest microservices (`@EventPattern`,
 * `@MessagePattern`) through the inbox. It sees the transport's context (RmqContext,
 * NatsContext, KafkaContext, …) whatever parameters the handler declares, so the message id
 * can come from the message's properties and headers. Applied by the decorator; other execution
 * contexts are left to the decorator's method wrapper. Protected hooks can be overridden by
 * subclassing (`@UseInterceptors(MyInboxInterceptor)` with `@IdempotentConsumer()`).
 */
@Injectable()
export class InboxInterceptor implements NestInterceptor {
  constructor(protected readonly inbox: InboxService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    const def: IdempotentConsumerDefinition | undefined = Reflect.getMetadata(
      IDEMPOTENT_CONSUMER_METADATA,
      handler,
    );
    if (!def || context.getType() !== 'rpc') return next.handle();
    const message = this.toMessage(context);
    const request = Reflect.getMetadata(PATTERN_HANDLER_METADATA, handler) === MESSAGE_HANDLER;
    return defer(async () => {
      let ran = false;
      const result = await this.consume(
        def,
        message,
        // The handler runs inside the inbox transaction; its own wrapper sees the mark and passes
        // through. Each call runs the handler anew (an in-place retry calls it again).
        () => {
          ran = true;
          return INBOX_HANDLED.run(handler, () =>
            lastValueFrom(next.handle(), { defaultValue: undefined }),
          );
        },
        handlerKindOf(handler),
      );
      // A request (@MessagePattern) whose handler did not run has no reply to give: an error
      // naming @Idempotent(), rather than an empty reply the caller would take for an answer.
      if (request && !ran) throw replyNotStored(def.consumer);
      return result;
    });
  }

  /** The consumed message as extractors see it (override to add fields to `data`). */
  protected toMessage(context: ExecutionContext): ConsumedMessage {
    const rpc = context.switchToRpc();
    return { kind: 'rpc', data: rpc.getData(), context: rpc.getContext(), args: context.getArgs() };
  }

  /** Runs the message through the inbox (override to wrap it, e.g. with tracing). */
  protected consume(
    def: IdempotentConsumerDefinition,
    message: ConsumedMessage,
    run: () => Promise<unknown>,
    handlerKind: 'event' | 'message' = 'event',
  ): Promise<unknown> {
    return consumeMessage(this.inbox, def, message, run, handlerKind);
  }
}
