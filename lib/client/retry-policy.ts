import { PROBLEM_TYPES } from '../problem-details/problem-types';
import { parseRetryAfter } from './retry-after';

/** Why an attempt is retried (the `reason` of `onRetry`). */
export type RetryReason = 'network-error' | 'timeout' | 'in-progress' | 'status';

/** Problem type of the 409 the server answers while the first attempt with the key still runs. */
export const IN_PROGRESS_PROBLEM_TYPE = PROBLEM_TYPES.inProgress;

/** Problem type of the 409 a late attempt gets when a retry took its lapsed lease over. */
export const LEASE_LOST_PROBLEM_TYPE = PROBLEM_TYPES.leaseLost;

/** Methods that are safe by definition (RFC 9110 §9.2.1): retried without a key. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/**
 * Statuses worth another attempt with the same key: 408, 425, 429 and every 5xx. A 409 is
 * decided by {@link retryReasonOf} (it needs the headers and maybe the body); any other 4xx is
 * final: the server stored it and would replay it.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * Exponential back-off with full jitter: uniform in [0, min(maxDelayMs, baseDelayMs · 2^(retry-1))),
 * `retry` counting from 1 (the wait after the first failed attempt).
 */
export function backoffDelay(
  retry: number,
  baseDelayMs: number,
  maxDelayMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/**
 * The wait before the next attempt: the back-off, or at least `Retry-After` when the response
 * carried one (the larger of the two, so that many clients told "0" or "1" still spread out),
 * never more than `maxDelayMs`.
 */
export function retryDelay(
  retry: number,
  retryAfterMs: number | undefined,
  baseDelayMs: number,
  maxDelayMs: number,
  random: () => number = Math.random,
): number {
  const backoff = backoffDelay(retry, baseDelayMs, maxDelayMs, random);
  return Math.min(maxDelayMs, Math.max(backoff, retryAfterMs ?? 0));
}

/**
 * Whether a response is retried, and why: `status` for 408/425/429/5xx, `in-progress` for a 409
 * that carries `Retry-After` or whose problem type says the key's first attempt is still running
 * (or lost its lease to a retry); `undefined` for anything else (returned to the caller at once).
 * Reads the body of a problem+json 409 without `Retry-After` from a clone: the response stays
 * readable.
 */
export async function retryReasonOf(response: Response): Promise<RetryReason | undefined> {
  if (isRetryableStatus(response.status)) return 'status';
  if (response.status !== 409) return undefined;
  if (parseRetryAfter(response.headers.get('retry-after')) !== undefined) return 'in-progress';
  const type = response.headers.get('content-type') ?? '';
  if (!/json/i.test(type)) return undefined;
  // An aborted read (time-out, caller) throws: not ours to hide.
  const text = await response.clone().text();
  let problem: { type?: unknown } | null;
  try {
    problem = JSON.parse(text) as { type?: unknown } | null;
  } catch {
    return undefined; // not JSON after all: a plain 409, final
  }
  const t = problem?.type;
  return t === IN_PROGRESS_PROBLEM_TYPE || t === LEASE_LOST_PROBLEM_TYPE
    ? 'in-progress'
    : undefined;
}
