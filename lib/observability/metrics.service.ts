import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { metrics, type BatchObservableCallback, type Meter } from '@opentelemetry/api';
import { createInstruments, type Instruments, METER_NAME } from './metric-instruments';

export { METER_NAME, METRIC_NAMES } from './metric-instruments';

/** What the outbox gauges report at one collection. */
export interface OutboxBacklogSnapshot {
  /** Messages waiting to be published (status pending, due or not). */
  pending: number;
  /** Age of the oldest pending message in ms (0 when none). */
  oldestPendingAgeMs: number;
  /** Messages that exhausted their attempts (status dead). */
  dead: number;
  /** Pending messages per publisher (the route fixed at enqueue; `default` without routes). */
  pendingByPublisher?: Record<string, number>;
}

/** Makes the instruments of the table on the library's meter, as properties of the subclass. */
const Instrumented = class {
  readonly meter: Meter = metrics.getMeter(METER_NAME);
  constructor() {
    Object.assign(this, createInstruments(this.meter));
  }
} as new () => Instruments & { readonly meter: Meter };

/**
 * The library's instruments, through @opentelemetry/api: no-ops until the app installs an
 * OpenTelemetry SDK MeterProvider (register it before the Nest app is created: instruments are
 * made when this service is constructed). Names and units are in {@link METRIC_NAMES} and the
 * operations guide; every instrument is declared once, in the table of `metric-instruments.ts`.
 */
@Injectable()
export class MetricsService extends Instrumented implements OnModuleDestroy {
  private readonly disposers = new Set<() => void>();

  /**
   * Registers the source of the outbox gauges (backlog, backlog per publisher, oldest pending
   * age, dead letters).
   * The source is called at each collection; returning undefined (or throwing) reports nothing.
   * Returns a function that unregisters it.
   * @internal
   */
  observeOutbox(source: () => Promise<OutboxBacklogSnapshot | undefined>): () => void {
    const callback: BatchObservableCallback = async (result) => {
      let snapshot: OutboxBacklogSnapshot | undefined;
      try {
        snapshot = await source();
      } catch {
        snapshot = undefined;
      }
      if (!snapshot) return;
      result.observe(this.outboxBacklog, snapshot.pending);
      result.observe(this.outboxOldestPendingAge, snapshot.oldestPendingAgeMs);
      result.observe(this.outboxDeadLetters, snapshot.dead);
      for (const [publisher, n] of Object.entries(snapshot.pendingByPublisher ?? {})) {
        result.observe(this.outboxPublisherBacklog, n, { publisher });
      }
    };
    const observables = [
      this.outboxBacklog,
      this.outboxPublisherBacklog,
      this.outboxOldestPendingAge,
      this.outboxDeadLetters,
    ];
    this.meter.addBatchObservableCallback(callback, observables);
    const dispose = () => {
      this.meter.removeBatchObservableCallback(callback, observables);
      this.disposers.delete(dispose);
    };
    this.disposers.add(dispose);
    return dispose;
  }

  /**
   * Registers the source of the relay's `outbox.relay.backing_off` gauge (1 while the relay
   * backs off as a whole, else 0). Returns a function that unregisters it.
   * @internal
   */
  observeRelay(source: () => number): () => void {
    const gauge = this.outboxRelayBackingOff;
    const callback = (result: { observe(value: number): void }) => result.observe(source());
    gauge.addCallback(callback);
    const dispose = () => {
      gauge.removeCallback(callback);
      this.disposers.delete(dispose);
    };
    this.disposers.add(dispose);
    return dispose;
  }

  /** Nest lifecycle hook: removes every observable instrument's callback from the meter. */
  onModuleDestroy(): void {
    for (const dispose of [...this.disposers]) dispose();
  }
}
