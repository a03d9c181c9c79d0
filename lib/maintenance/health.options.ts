/*
 * The health indicator's thresholds (`health: {…}` of the module): types, defaults and checks. Merged with the other features' options in
 * idempotency-options.resolver.ts (the one place where defaults are applied).
 */

/** Thresholds of the health indicator (`IdempotencyHealthIndicator`); each can be overridden per check. */
export interface HealthOptions {
  /** The relay in this process counts as dead when it has not polled for this long, in ms. Default 30 s. */
  relayHeartbeatTimeoutMs?: number;
  /** Unhealthy when the oldest pending outbox message is older than this, in ms. Default 5 minutes. */
  maxPendingAgeMs?: number;
  /** Unhealthy when more outbox messages than this are dead. Default: no limit (the count is only reported). */
  maxDeadLetters?: number;
}

/** The health defaults. @internal */
export const HEALTH_DEFAULTS: Required<HealthOptions> = {
  relayHeartbeatTimeoutMs: 30_000,
  maxPendingAgeMs: 5 * 60 * 1000,
  maxDeadLetters: Number.POSITIVE_INFINITY,
};

/** Checks of the health thresholds. @internal */
export function validateHealthOptions(
  o: Required<HealthOptions>,
  fail: (msg: string) => void,
): void {
  if (!(o.relayHeartbeatTimeoutMs > 0)) {
    fail('health.relayHeartbeatTimeoutMs must be a positive number of milliseconds');
  }
  if (!(o.maxPendingAgeMs > 0)) {
    fail('health.maxPendingAgeMs must be a positive number of milliseconds');
  }
  if (!(o.maxDeadLetters >= 0)) fail('health.maxDeadLetters must be >= 0');
}
