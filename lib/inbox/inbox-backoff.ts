import type { InboxOptions } from './inbox.options';
import { outboxBackoffMs } from '../outbox/outbox-backoff';
import { BACKOFF_INVALID } from './inbox.messages';

/** The inbox's backoff options, checked at boot and per consumer. */
export type InboxBackoff = Required<Pick<InboxOptions, 'backoffBaseMs' | 'backoffMaxMs'>>;

/** The error text of invalid backoff options, or undefined when they are valid. @internal */
export function inboxBackoffProblem(o: InboxBackoff): string | undefined {
  const { backoffBaseMs: base, backoffMaxMs: max } = o;
  const valid =
    typeof base === 'number' &&
    typeof max === 'number' &&
    base >= 0 &&
    max >= base &&
    max < Infinity;
  return valid ? undefined : BACKOFF_INVALID(base, max);
}

/**
 * Delay before a message that failed `failedAttempts` times runs again: exponential from
 * `backoffBaseMs`, capped at `backoffMaxMs`, with equal jitter (the outbox relay's schedule), so
 * messages that failed together do not come back together. @internal
 */
export function inboxRetryDelayMs(failedAttempts: number, o: InboxBackoff): number {
  return outboxBackoffMs(Math.max(1, failedAttempts), o.backoffBaseMs, o.backoffMaxMs);
}
