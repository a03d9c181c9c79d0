import { Inject, Injectable, Optional, type OnModuleDestroy } from '@nestjs/common';
import { Subject, type Observable } from 'rxjs';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';
import { eventChannels } from './event.channels';
import type { ResolvedGateOptions } from '../gate/gate.options';
import type { ExactlyOnceEvent, ExactlyOnceEventFamily, GateEvent } from './exactly-once-event';

/**
 * The library's events as an RxJS stream: `events$` emits every {@link ExactlyOnceEvent} (gate,
 * relay, inbox) of this process, in order, synchronously at the moment it happens (keep
 * subscribers fast, or move work off with an operator such as `observeOn(asyncScheduler)`).
 * Filter by family with `filter((e) => e.type.startsWith('relay.'))`. The same events reach the
 * diagnostics channels (`EVENT_CHANNELS`) and, for relay and inbox events, the module's
 * `onEvent` hook (the gate calls the hook itself, with the endpoint's own `onEvent`).
 */
@Injectable()
export class ExactlyOnceEvents implements OnModuleDestroy {
  private readonly subject = new Subject<ExactlyOnceEvent>();
  private readonly logger: LibraryLogger;

  /** Every event of the library in this process. */
  readonly events$: Observable<ExactlyOnceEvent> = this.subject.asObservable();

  constructor(
    @Optional()
    @Inject(IDEMPOTENCY_OPTIONS)
    private readonly options?: Pick<ResolvedIdempotencyOptions, 'onEvent' | 'logger'>,
  ) {
    this.logger = new LibraryLogger(options?.logger, 'ExactlyOnce');
  }

  /**
   * Whether anyone listens to the family (a subscriber of `events$`, of its channel, or an
   * `onEvent` hook): the emitter builds no event otherwise. @internal
   */
  observed(family: ExactlyOnceEventFamily): boolean {
    return this.subject.observed || eventChannels[family].hasSubscribers || !!this.options?.onEvent;
  }

  /**
   * Publishes an event on `events$` and its family's channel and, unless `hook` is false, calls
   * the module's `onEvent` (the gate passes false: it called the endpoint's hook). A throwing
   * subscriber or hook is logged, never thrown at the emitter. @internal
   */
  emit(event: ExactlyOnceEvent, hook = true): void {
    const family = event.type.slice(0, event.type.indexOf('.')) as ExactlyOnceEventFamily;
    const ch = eventChannels[family];
    try {
      if (ch.hasSubscribers) ch.publish(event);
      if (this.subject.observed) this.subject.next(event);
      if (hook) this.options?.onEvent?.(event as never);
    } catch (e) {
      this.logger.event('warn', 'events.subscriber-failed', () => ({
        type: event.type,
        error: e instanceof Error ? e.message : String(e),
      }));
    }
  }

  /**
   * A gate answer: the endpoint's `onEvent` first (its error goes to `failed`, never to the
   * request), then `events$` and the gate channel. @internal
   */
  emitGate(
    opts: Pick<ResolvedGateOptions, 'onEvent' | 'mode'>,
    kind: GateEvent['kind'],
    status: number,
    request: Pick<GateEvent, 'keyHash' | 'method' | 'path' | 'request'>,
    failed: (error: string) => void,
  ): void {
    if (!opts.onEvent && !this.observed('gate')) return;
    const event: GateEvent = { type: `gate.${kind}`, kind, ...request, mode: opts.mode, status };
    try {
      opts.onEvent?.(event);
    } catch (e) {
      failed(e instanceof Error ? e.message : String(e));
    }
    this.emit(event, false);
  }

  /** Nest lifecycle hook: completes `events$` (its subscribers see the stream end). */
  onModuleDestroy(): void {
    this.subject.complete();
  }
}
