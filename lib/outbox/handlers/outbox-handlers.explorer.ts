import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef, Reflector } from '@nestjs/core';
import { context as otelContext } from '@opentelemetry/api';
import { IDEMPOTENCY_OPTIONS } from '../../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../../idempotency.options';
import { InboxService } from '../../inbox/inbox.service';
import { traceConsume } from '../../observability/inbox.tracing';
import { DatabaseService } from '../../persistence/database.service';
import type { OutboxMessage } from '../outbox-message.interface';
import { OutboxPublisher } from '../outbox-publisher.interface';
import { NoOutboxHandlerError } from '../outbox.errors';
import {
  HANDLER_REQUEST_SCOPED,
  HANDLERS_WITHOUT_IN_PROCESS_PUBLISHER,
  NO_OUTBOX_HANDLER,
} from '../outbox.messages';
import { InProcessPublisher } from '../publishers/in-process.publisher';
import { OUTBOX_HANDLER_METADATA, type OutboxHandlerMetadata } from './on-outbox-message.decorator';
import { OutboxHandlersRegistry } from './outbox-handlers.registry';

/**
 * Finds the `@OnOutboxMessage()` methods of the app's singleton providers at module init, fills
 * the registry and binds every in-process publisher of the options to them; fails the boot when
 * handlers exist but no in-process publisher would run them.
 * @internal
 */
@Injectable()
export class OutboxHandlersExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly moduleRef: ModuleRef,
    private readonly registry: OutboxHandlersRegistry,
    private readonly db: DatabaseService,
    private readonly inbox: InboxService,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {}

  onModuleInit(): void {
    this.explore();
    const publishers = this.inProcessPublishers();
    if (this.registry.handlerNames().length && !publishers.length) {
      throw new Error(HANDLERS_WITHOUT_IN_PROCESS_PUBLISHER(this.registry.handlerNames()));
    }
    for (const p of publishers) p.bind((message, signal) => this.dispatch(message, signal));
  }

  /** Runs every handler of the message's type, each in its own transaction with its inbox record. */
  async dispatch(message: OutboxMessage, signal: AbortSignal): Promise<void> {
    const handlers = this.registry.handlersOf(message.type);
    if (!handlers.length) {
      throw new NoOutboxHandlerError(NO_OUTBOX_HANDLER(message.type), message.type);
    }
    let failure: unknown;
    let failed = false;
    for (const h of handlers) {
      if (signal.aborted) throw signal.reason;
      // A `process <type>` span per handler, continuing the trace the relay's send span put in
      // the headers, as a broker consumer's (observability/inbox.tracing.ts).
      const traced = traceConsume(h.name, (k) => message.headers?.[k], {
        system: 'in-process',
        destination: message.type,
      });
      traced.messageId(message.id);
      try {
        const outcome = await otelContext.with(traced.context, () =>
          this.db.inTransaction(() =>
            this.inbox.process(h.name, message.id, () =>
              h.run(message.payload, { message, signal, handler: h.name }),
            ),
          ),
        );
        traced.settled(
          outcome.status,
          outcome.duplicate,
          outcome.attempts,
          outcome.status === 'failed' ? outcome.error : undefined,
        );
      } catch (e) {
        traced.failed('retry', e, false);
        // The others still run: each has its own record, so the retry runs only what failed.
        if (!failed) failure = e;
        failed = true;
      }
    }
    if (failed) throw failure;
  }

  private explore(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const { instance } = wrapper;
      if (!instance || typeof instance !== 'object') continue;
      const proto = Object.getPrototypeOf(instance);
      if (!proto) continue;
      for (const method of this.scanner.getAllMethodNames(proto)) {
        const fn = (instance as Record<string, unknown>)[method];
        if (typeof fn !== 'function') continue;
        const meta = this.reflector.get<OutboxHandlerMetadata | undefined>(
          OUTBOX_HANDLER_METADATA,
          fn,
        );
        if (!meta) continue;
        const owner = `${proto.constructor?.name ?? 'provider'}.${method}`;
        if (!wrapper.isDependencyTreeStatic()) throw new Error(HANDLER_REQUEST_SCOPED(owner));
        const name = meta.name ?? owner;
        for (const type of meta.types) {
          this.registry.add(
            type,
            {
              name,
              run: (payload, ctx) =>
                (fn as (p: unknown, c: unknown) => unknown).call(instance, payload, ctx),
            },
            owner,
          );
        }
      }
    }
  }

  /** The in-process publishers of this app: in the options, or the OutboxPublisher provider. */
  private inProcessPublishers(): InProcessPublisher[] {
    const o = this.options.outbox;
    const all: unknown[] = [o.publisher, ...Object.values(o.publishers ?? {})];
    try {
      all.push(this.moduleRef.get(OutboxPublisher, { strict: false }));
    } catch {
      // no provider
    }
    return [...new Set(all)].filter(
      (p): p is InProcessPublisher => p instanceof InProcessPublisher,
    );
  }
}
