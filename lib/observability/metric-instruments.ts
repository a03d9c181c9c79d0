import type { Counter, Histogram, Meter, MetricAdvice, ObservableGauge } from '@opentelemetry/api';

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
  outboxUnavailable: 'outbox.unavailable',
  outboxRelayBackingOff: 'outbox.relay.backing_off',
  outboxBacklog: 'outbox.backlog',
  outboxPublisherBacklog: 'outbox.publisher.backlog',
  outboxOldestPendingAge: 'outbox.oldest_pending.age',
  outboxDeadLetters: 'outbox.dead_letters',
  inboxProcessed: 'inbox.processed',
  inboxDuplicates: 'inbox.duplicates',
  inboxFailed: 'inbox.failed',
  cleanupDeleted: 'cleanup.deleted',
  cleanupDuration: 'cleanup.run.duration',
} as const;

type Kind = 'counter' | 'histogram' | 'gauge';
interface InstrumentSpec<K extends Kind = Kind> {
  kind: K;
  name: string;
  unit: string;
  description: string;
  advice?: MetricAdvice;
}
const spec =
  <K extends Kind>(kind: K) =>
  (name: string, unit: string, description: string, advice?: MetricAdvice): InstrumentSpec<K> => ({
    kind,
    name,
    unit,
    description,
    advice,
  });
const counter = spec('counter');
const histogram = spec('histogram');
const gauge = spec('gauge');

const N = METRIC_NAMES;
const LAG_BUCKETS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000];

/**
 * Every instrument of the library, by the MetricsService property that holds it. The outbox relay's
 * instruments carry no attributes, so that cardinality stays fixed.
 */
const INSTRUMENTS = {
  // HTTP idempotency gate
  idempotencyStarted: counter(
    N.idempotencyStarted,
    '{request}',
    'Guarded requests that reserved a fresh key and ran the handler',
  ),
  idempotencyReplayed: counter(
    N.idempotencyReplayed,
    '{request}',
    'Requests answered from a stored response',
  ),
  idempotencyInProgressConflicts: counter(
    N.idempotencyInProgressConflicts,
    '{request}',
    'Requests answered 409 because the same key was still running',
  ),
  idempotencyMismatchConflicts: counter(
    N.idempotencyMismatchConflicts,
    '{request}',
    'Requests answered 422/409 because the key was used with another payload',
  ),
  idempotencyCompleteFailures: counter(
    N.idempotencyCompleteFailures,
    '{request}',
    'Guarded requests whose completion could not be committed (rolled back)',
  ),
  idempotencyStoreLatency: histogram(
    N.idempotencyStoreDuration,
    'ms',
    'Latency of idempotency ledger statements (attribute op: lookup, reserve, complete)',
  ),
  // Outbox relay
  outboxPublished: counter(
    N.outboxPublished,
    '{message}',
    'Outbox messages confirmed by the broker and marked sent',
  ),
  outboxFailed: counter(
    N.outboxFailed,
    '{message}',
    'Failed publish attempts (the message is retried after a backoff)',
  ),
  outboxDead: counter(
    N.outboxDead,
    '{message}',
    'Outbox messages that exhausted their attempts and became dead letters',
  ),
  outboxUnavailable: counter(
    N.outboxUnavailable,
    '{message}',
    'Publishes that found the broker unreachable: given back unpublished, no attempt counted',
  ),
  outboxPublishLag: histogram(
    N.outboxPublishLag,
    'ms',
    'Commit-to-publish lag: from the outbox row being written to the broker confirming it',
    { explicitBucketBoundaries: LAG_BUCKETS },
  ),
  // The relay of this process, observed through MetricsService.observeRelay()
  outboxRelayBackingOff: gauge(
    N.outboxRelayBackingOff,
    '1',
    '1 while the relay of this process backs off as a whole (broker or database unreachable), else 0',
  ),
  // Outbox gauges, observed through MetricsService.observeOutbox()
  outboxBacklog: gauge(
    N.outboxBacklog,
    '{message}',
    'Outbox messages waiting to be published (status pending)',
  ),
  outboxPublisherBacklog: gauge(
    N.outboxPublisherBacklog,
    '{message}',
    'Outbox messages waiting to be published, per publisher (attribute `publisher`: the route fixed at enqueue, `default` without routes)',
  ),
  outboxOldestPendingAge: gauge(
    N.outboxOldestPendingAge,
    'ms',
    'Age of the oldest pending outbox message',
  ),
  outboxDeadLetters: gauge(
    N.outboxDeadLetters,
    '{message}',
    'Outbox messages in status dead (kept until re-queued or purged)',
  ),
  // Inbox
  inboxProcessed: counter(
    N.inboxProcessed,
    '{message}',
    'Messages whose handler ran and committed with their inbox record',
  ),
  inboxDuplicates: counter(
    N.inboxDuplicates,
    '{message}',
    'Redelivered messages skipped because their id was already recorded',
  ),
  inboxFailed: counter(
    N.inboxFailed,
    '{message}',
    'Messages recorded as failed after exhausting their attempts',
  ),
  // Retention cleanup
  cleanupDeleted: counter(
    N.cleanupDeleted,
    '{row}',
    'Rows deleted by retention cleanup (attribute table: idempotency, outbox, inbox)',
  ),
  cleanupDuration: histogram(
    N.cleanupDuration,
    'ms',
    'Duration of one cleanup run (several bounded DELETE statements)',
  ),
};

type InstrumentOf<S> =
  S extends InstrumentSpec<'counter'>
    ? Counter
    : S extends InstrumentSpec<'histogram'>
      ? Histogram
      : ObservableGauge;

/** The instruments of {@link INSTRUMENTS}, made on one meter. */
export type Instruments = {
  readonly [P in keyof typeof INSTRUMENTS]: InstrumentOf<(typeof INSTRUMENTS)[P]>;
};

/**
 * Makes every instrument of the table on `meter`.
 * @internal
 */
export function createInstruments(meter: Meter): Instruments {
  const made: Record<string, unknown> = {};
  for (const [property, s] of Object.entries(INSTRUMENTS) as Array<[string, InstrumentSpec]>) {
    const options = {
      description: s.description,
      unit: s.unit,
      ...(s.advice ? { advice: s.advice } : {}),
    };
    made[property] =
      s.kind === 'counter'
        ? meter.createCounter(s.name, options)
        : s.kind === 'histogram'
          ? meter.createHistogram(s.name, options)
          : meter.createObservableGauge(s.name, options);
  }
  return made as Instruments;
}
