import { Injectable, OnModuleDestroy } from '@nestjs/common';
import {
  metrics,
  type BatchObservableCallback,
  type Counter,
  type Histogram,
  type Meter,
  type ObservableGauge,
} from '@opentelemetry/api';

/** Meter name under which every instrument of the library is registered. */
export const METER_NAME = 'nestjs-exactly-once';

/**
 * Instrument names, as registered with OpenTelemetry. A Prometheus exporter turns dots into
 * underscores and appends the unit and `_total` (counters): `outbox.published` is scraped as
 * `outbox_published_total`, `outbox.publish.lag` (ms) as `outbox_publish_lag_milliseconds_*`.
 */
export const METRIC_NAMES = {
  idempotencyStarted: 'idempotency.started',
  idempotencyReplayed: 'idempotency.replayed',
  idempotencyInProgressConflicts: 'idempotency.in_progress_conflicts',
  idempotencyMismatchConflicts: 'idempotency.mismatch_conflicts',
  idempotencyCompleteFailures: 'idempotency.complete_failures',
  idempotencyStoreDuration: 'idempotency.store.duration',
  outboxPublished: 'outbox.published',
  outboxFailed: 'outbox.failed',
  outboxDead: 'outbox.dead',
  outboxPublishLag: 'outbox.publish.lag',
  outboxBacklog: 'outbox.backlog',
  outboxOldestPendingAge: 'outbox.oldest_pending.age',
  outboxDeadLetters: 'outbox.dead_letters',
  inboxProcessed: 'inbox.processed',
  inboxDuplicates: 'inbox.duplicates',
  inboxFailed: 'inbox.failed',
  cleanupDeleted: 'cleanup.deleted',
  cleanupDuration: 'cleanup.run.duration',
} as const;

/** What the outbox gauges report at one collection. */
export interface OutboxBacklogSnapshot {
  /** Messages waiting to be published (status pending, due or not). */
  pending: number;
  /** Age of the oldest pending message in ms (0 when none). */
  oldestPendingAgeMs: number;
  /** Messages that exhausted their attempts (status dead). */
  dead: number;
}

/**
 * The library's instruments, through @opentelemetry/api: no-ops until the app installs an
 * OpenTelemetry SDK MeterProvider (register it before the Nest app is created: instruments are
 * made when this service is constructed). Names and units are in {@link METRIC_NAMES} and the
 * operations guide.
 */
@Injectable()
export class MetricsService implements OnModuleDestroy {
  readonly meter: Meter = metrics.getMeter(METER_NAME);

  // ---- HTTP idempotency gate ----
  readonly idempotencyStarted: Counter = this.meter.createCounter(METRIC_NAMES.idempotencyStarted, {
    description: 'Guarded requests that reserved a fresh key and ran the handler',
    unit: '{request}',
  });
  readonly idempotencyReplayed: Counter = this.meter.createCounter(
    METRIC_NAMES.idempotencyReplayed,
    {
      description: 'Requests answered from a stored response',
      unit: '{request}',
    },
  );
  readonly idempotencyInProgressConflicts: Counter = this.meter.createCounter(
    METRIC_NAMES.idempotencyInProgressConflicts,
    {
      description: 'Requests answered 409 because the same key was still running',
      unit: '{request}',
    },
  );
  readonly idempotencyMismatchConflicts: Counter = this.meter.createCounter(
    METRIC_NAMES.idempotencyMismatchConflicts,
    {
      description: 'Requests answered 422/409 because the key was used with another payload',
      unit: '{request}',
    },
  );
  readonly idempotencyCompleteFailures: Counter = this.meter.createCounter(
    METRIC_NAMES.idempotencyCompleteFailures,
    {
      description: 'Guarded requests whose completion could not be committed (rolled back)',
      unit: '{request}',
    },
  );
  readonly idempotencyStoreLatency: Histogram = this.meter.createHistogram(
    METRIC_NAMES.idempotencyStoreDuration,
    {
      description:
        'Latency of idempotency ledger statements (attribute op: lookup, reserve, complete)',
      unit: 'ms',
    },
  );

  // ---- Outbox relay (attributes: none, so cardinality stays fixed) ----
  readonly outboxPublished: Counter = this.meter.createCounter(METRIC_NAMES.outboxPublished, {
    description: 'Outbox messages confirmed by the broker and marked sent',
    unit: '{message}',
  });
  readonly outboxFailed: Counter = this.meter.createCounter(METRIC_NAMES.outboxFailed, {
    description: 'Failed publish attempts (the message is retried after a backoff)',
    unit: '{message}',
  });
  readonly outboxDead: Counter = this.meter.createCounter(METRIC_NAMES.outboxDead, {
    description: 'Outbox messages that exhausted their attempts and became dead letters',
    unit: '{message}',
  });
  readonly outboxPublishLag: Histogram = this.meter.createHistogram(METRIC_NAMES.outboxPublishLag, {
    description:
      'Commit-to-publish lag: from the outbox row being written to the broker confirming it',
    unit: 'ms',
    advice: {
      explicitBucketBoundaries: [
        5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000,
      ],
    },
  });
  /** @internal Observed through {@link observeOutbox}. */
  readonly outboxBacklog: ObservableGauge = this.meter.createObservableGauge(
    METRIC_NAMES.outboxBacklog,
    {
      description: 'Outbox messages waiting to be published (status pending)',
      unit: '{message}',
    },
  );
  /** @internal Observed through {@link observeOutbox}. */
  readonly outboxOldestPendingAge: ObservableGauge = this.meter.createObservableGauge(
    METRIC_NAMES.outboxOldestPendingAge,
    {
      description: 'Age of the oldest pending outbox message',
      unit: 'ms',
    },
  );
  /** @internal Observed through {@link observeOutbox}. */
  readonly outboxDeadLetters: ObservableGauge = this.meter.createObservableGauge(
    METRIC_NAMES.outboxDeadLetters,
    {
      description: 'Outbox messages in status dead (kept until re-queued or purged)',
      unit: '{message}',
    },
  );

  // ---- Inbox ----
  readonly inboxProcessed: Counter = this.meter.createCounter(METRIC_NAMES.inboxProcessed, {
    description: 'Messages whose handler ran and committed with their inbox record',
    unit: '{message}',
  });
  readonly inboxDuplicates: Counter = this.meter.createCounter(METRIC_NAMES.inboxDuplicates, {
    description: 'Redelivered messages skipped because their id was already recorded',
    unit: '{message}',
  });
  readonly inboxFailed: Counter = this.meter.createCounter(METRIC_NAMES.inboxFailed, {
    description: 'Messages recorded as failed after exhausting their attempts',
    unit: '{message}',
  });

  // ---- Cleanup ----
  readonly cleanupDeleted: Counter = this.meter.createCounter(METRIC_NAMES.cleanupDeleted, {
    description: 'Rows deleted by retention cleanup (attribute table: idempotency, outbox, inbox)',
    unit: '{row}',
  });
  readonly cleanupDuration: Histogram = this.meter.createHistogram(METRIC_NAMES.cleanupDuration, {
    description: 'Duration of one cleanup run (several bounded DELETE statements)',
    unit: 'ms',
  });

  private readonly disposers = new Set<() => void>();

  /**
   * Registers the source of the outbox gauges (backlog, oldest pending age, dead letters).
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
    };
    const observables = [this.outboxBacklog, this.outboxOldestPendingAge, this.outboxDeadLetters];
    this.meter.addBatchObservableCallback(callback, observables);
    const dispose = () => {
      this.meter.removeBatchObservableCallback(callback, observables);
      this.disposers.delete(dispose);
    };
    this.disposers.add(dispose);
    return dispose;
  }

  onModuleDestroy(): void {
    for (const dispose of [...this.disposers]) dispose();
  }
}
