/*
 * The cleanup job's options (`cleanup: {…}` of the module): types, defaults and checks. Merged with the other features' options in
 * idempotency-options.resolver.ts (the one place where defaults are applied).
 */

/** The cleanup job that deletes expired records (`cleanup: {…}` of the module). */
export interface CleanupOptions {
  /** Run cleanup in this process. Default true. */
  enabled?: boolean;
  /** Interval in ms. Default 60 s. */
  intervalMs?: number;
  /** Rows per DELETE statement (≤ 4000 on SQL Server). Default 1000. */
  batchSize?: number;
  /** Time budget per run, in ms. Default 5000. */
  timeBudgetMs?: number;
  /**
   * Share of a run's wall time spent in DELETE statements, 0 < d <= 1: after a full batch the run
   * pauses for the statement's duration × (1 - d) / d, so cleanup never monopolizes a connection
   * or the database. 1: statements back to back. Default 0.25.
   */
  dutyCycle?: number;
  /** Sent outbox messages are kept this long, in ms. Default 7 days. */
  outboxRetentionMs?: number;
  /** Inbox records are kept this long, in ms (must exceed the broker's redelivery window). Default 7 days. */
  inboxRetentionMs?: number;
}

/** The cleanup defaults. @internal */
export const CLEANUP_DEFAULTS: Required<CleanupOptions> = {
  enabled: true,
  intervalMs: 60_000,
  batchSize: 1000,
  timeBudgetMs: 5000,
  dutyCycle: 0.25,
  outboxRetentionMs: 7 * 24 * 60 * 60 * 1000,
  inboxRetentionMs: 7 * 24 * 60 * 60 * 1000,
};

/** Checks of the cleanup options. @internal */
export function validateCleanupOptions(
  o: Required<CleanupOptions>,
  fail: (msg: string) => void,
): void {
  if (o.batchSize < 1 || o.batchSize > 4000) fail('cleanup.batchSize must be between 1 and 4000');
  if (!(o.intervalMs > 0)) fail('cleanup.intervalMs must be a positive number of milliseconds');
  if (!(o.timeBudgetMs > 0)) fail('cleanup.timeBudgetMs must be a positive number of milliseconds');
  if (!(o.dutyCycle > 0 && o.dutyCycle <= 1)) {
    fail('cleanup.dutyCycle must be greater than 0 and at most 1');
  }
  if (!(o.outboxRetentionMs >= 0)) fail('cleanup.outboxRetentionMs must be >= 0');
  if (!(o.inboxRetentionMs >= 0)) fail('cleanup.inboxRetentionMs must be >= 0');
}
