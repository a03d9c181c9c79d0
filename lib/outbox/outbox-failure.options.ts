import type { OutboxMessage } from './outbox-message.interface';

/**
 * Whether a failed publish (or in-process handler) is tried again: `false` makes the message
 * dead at once, whatever attempts it has left. Called for every failed attempt that was not a
 * `NonRetryableError` and not an unreachable broker (those count no attempt). A `retryIf` that
 * throws counts as `true` (the message is retried; the relay logs `outbox.policy-failed`).
 */
export type OutboxRetryIf = (error: Error, message: OutboxMessage) => boolean;

/**
 * Delay before the next attempt after the `attempt`-th failure (1-based), in ms. A result that
 * is not a finite number >= 0 (or a throw) falls back to the default backoff for that attempt
 * (the relay logs `outbox.policy-failed`).
 */
export type OutboxBackoff = (attempt: number, message: OutboxMessage, error: Error) => number;

/**
 * Attempts before a message becomes dead, per message type: a map (`{ 'payment.captured': 10 }`,
 * types not in it get `outbox.maxAttempts`) or a function of the type (undefined: `maxAttempts`).
 * Map values are checked at boot; a function's result is checked per call (not an integer >= 1:
 * `maxAttempts`, logged as `outbox.policy-failed`).
 */
export type OutboxMaxAttemptsByType =
  Readonly<Record<string, number>> | ((type: string) => number | undefined);

/** The outbox's failure control (module option `outbox`, next to `maxAttempts` and the backoff). */
export interface OutboxFailureOptions {
  /** Retry or not, per failed attempt. Default: every failure is retried up to the max attempts. */
  retryIf?: OutboxRetryIf;
  /**
   * The delay before the next attempt. Default: exponential from `outbox.backoffBaseMs`, capped
   * at `outbox.backoffMaxMs`, with equal jitter (`outboxBackoffMs`).
   */
  backoff?: OutboxBackoff;
  /** Max attempts per message type. Default: `outbox.maxAttempts` for every type. */
  maxAttemptsByType?: OutboxMaxAttemptsByType;
}

/** The failure-control option names (kept optional after defaults). @internal */
export type OutboxFailureOptionKey = keyof OutboxFailureOptions;

/**
 * How much failure history a message keeps: the newest `entries` failed attempts, each error
 * message cut to `messageLength` characters (older entries are dropped, oldest first).
 */
export const OUTBOX_FAILURE_HISTORY = { entries: 10, messageLength: 500 } as const;

/** Checks the failure-control options at boot; `fail` throws with the module's prefix. @internal */
export function validateOutboxFailureOptions(
  o: OutboxFailureOptions,
  fail: (msg: string) => void,
): void {
  if (o.retryIf !== undefined && typeof o.retryIf !== 'function') {
    fail(
      'outbox.retryIf must be a function (error, message) => boolean, e.g. retryIf: (e) => !(e instanceof ValidationError)',
    );
  }
  if (o.backoff !== undefined && typeof o.backoff !== 'function') {
    fail(
      'outbox.backoff must be a function (attempt, message, error) => milliseconds, e.g. backoff: (n) => 1000 * n',
    );
  }
  const byType = o.maxAttemptsByType as unknown;
  if (byType === undefined || typeof byType === 'function') return;
  if (typeof byType !== 'object' || byType === null || Array.isArray(byType)) {
    fail(
      "outbox.maxAttemptsByType must be a map of message type to attempts ({ 'payment.captured': 10 }) or a function (type) => attempts | undefined",
    );
    return;
  }
  for (const [type, n] of Object.entries(byType as Record<string, unknown>)) {
    if (!(typeof n === 'number' && Number.isInteger(n) && n >= 1)) {
      fail(`outbox.maxAttemptsByType['${type}'] must be an integer >= 1; got ${String(n)}`);
    }
  }
}
