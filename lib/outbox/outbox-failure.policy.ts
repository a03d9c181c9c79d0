import { outboxBackoffMs } from './outbox-backoff';
import type { OutboxFailureOptions } from './outbox-failure.options';
import { OUTBOX_FAILURE_HISTORY } from './outbox-failure.options';
import type { OutboxMessage } from './outbox-message.interface';
import { NonRetryableError } from './outbox.errors';

/** What the relay does with one failed attempt. @internal */
export interface OutboxFailureDecision {
  dead: boolean;
  /** Delay before the next attempt (0 when dead). */
  retryInMs: number;
  /** The attempts this message's type allows. */
  maxAttempts: number;
  /** Why it is dead: a `NonRetryableError`, `retryIf` said no, or the attempts are used up. */
  deadBecause?: 'non-retryable' | 'retry-if' | 'max-attempts';
}

/** The options the decision reads. @internal */
export interface OutboxFailureSettings extends OutboxFailureOptions {
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
}

/** A `NonRetryableError`, also one from another copy of the library (same name). */
export function isNonRetryable(error: unknown): boolean {
  return (
    error instanceof NonRetryableError ||
    (error instanceof Error && error.name === 'NonRetryableError')
  );
}

/**
 * Decides the fate of the `attempt`-th failed attempt (1-based) of a message: dead at once for a
 * `NonRetryableError` or when `retryIf` says no, dead when the type's max attempts are reached,
 * else pending again after the backoff. `message` is undefined when the stored row could not be
 * read (payload not JSON): only the attempt count and the default backoff apply. A policy
 * function that throws or answers nonsense falls back to the default, reported to `onPolicyError`.
 * @internal
 */
export function decideFailure(
  p: { attempt: number; error: Error; type: string; message: OutboxMessage | undefined },
  o: OutboxFailureSettings,
  onPolicyError: (option: string, problem: string) => void,
  random: () => number = Math.random,
): OutboxFailureDecision {
  const maxAttempts = maxAttemptsOf(p.type, o, onPolicyError);
  if (isNonRetryable(p.error)) {
    return { dead: true, retryInMs: 0, maxAttempts, deadBecause: 'non-retryable' };
  }
  if (o.retryIf && p.message) {
    let again = true;
    try {
      again = o.retryIf(p.error, p.message) !== false;
    } catch (e) {
      onPolicyError('retryIf', `threw ${String(e)}; the message is retried`);
    }
    if (!again) return { dead: true, retryInMs: 0, maxAttempts, deadBecause: 'retry-if' };
  }
  if (p.attempt >= maxAttempts) {
    return { dead: true, retryInMs: 0, maxAttempts, deadBecause: 'max-attempts' };
  }
  const fallback = () => outboxBackoffMs(p.attempt, o.backoffBaseMs, o.backoffMaxMs, random);
  if (!o.backoff || !p.message) return { dead: false, retryInMs: fallback(), maxAttempts };
  try {
    const ms = o.backoff(p.attempt, p.message, p.error);
    if (typeof ms === 'number' && Number.isFinite(ms) && ms >= 0) {
      return { dead: false, retryInMs: Math.round(ms), maxAttempts };
    }
    onPolicyError(
      'backoff',
      `returned ${String(ms)}, not a number of ms >= 0; default backoff used`,
    );
  } catch (e) {
    onPolicyError('backoff', `threw ${String(e)}; default backoff used`);
  }
  return { dead: false, retryInMs: fallback(), maxAttempts };
}

function maxAttemptsOf(
  type: string,
  o: OutboxFailureSettings,
  onPolicyError: (option: string, problem: string) => void,
): number {
  const byType = o.maxAttemptsByType;
  if (!byType) return o.maxAttempts;
  if (typeof byType !== 'function') {
    return Object.prototype.hasOwnProperty.call(byType, type) ? byType[type] : o.maxAttempts;
  }
  let n: number | undefined;
  try {
    n = byType(type);
  } catch (e) {
    onPolicyError('maxAttemptsByType', `threw ${String(e)} for type ${type}; maxAttempts used`);
    return o.maxAttempts;
  }
  if (n === undefined) return o.maxAttempts;
  if (Number.isInteger(n) && n >= 1) return n;
  onPolicyError('maxAttemptsByType', `returned ${String(n)} for type ${type}; maxAttempts used`);
  return o.maxAttempts;
}

/** One failed attempt as kept with the message (`failures` column, JSON). */
export interface OutboxFailureRecord {
  /** When the relay recorded it (the relay's clock, ISO 8601). */
  at: string;
  /** The attempt's number (1-based; counting starts again after a requeue). */
  attempt: number;
  /** The relay instance (`<host>/<pid>/<random>`). */
  relay: string;
  /** The error's class (its `name`, else its constructor's name). */
  error: string;
  /** The error's message, cut to 500 characters. */
  message: string;
}

/** The class name of an error as history shows it. */
export function errorClassOf(error: Error): string {
  if (error.name && error.name !== 'Error') return error.name;
  return error.constructor?.name || 'Error';
}

/** Parses a stored history (null or unreadable: none). */
export function parseFailures(text: string | null): OutboxFailureRecord[] {
  if (!text) return [];
  try {
    const list = JSON.parse(text);
    return Array.isArray(list) ? (list as OutboxFailureRecord[]) : [];
  } catch {
    return [];
  }
}

/** The stored history with `record` appended, the newest {@link OUTBOX_FAILURE_HISTORY}.entries kept. @internal */
export function appendFailure(stored: string | null, record: OutboxFailureRecord): string {
  const max = OUTBOX_FAILURE_HISTORY.messageLength;
  const entry = {
    ...record,
    message: record.message.length > max ? `${record.message.slice(0, max - 1)}…` : record.message,
  };
  const list = [...parseFailures(stored), entry];
  return JSON.stringify(list.slice(-OUTBOX_FAILURE_HISTORY.entries));
}
