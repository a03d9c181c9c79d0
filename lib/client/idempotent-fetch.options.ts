import {
  HEADER_NAME_INVALID,
  OPTION_NOT_FUNCTION,
  OPTION_NOT_NON_NEGATIVE,
  OPTION_NOT_POSITIVE_INTEGER,
} from './client.messages';
import type { RetryReason } from './retry-policy';
import { stripUndefined } from '../internal/strip-undefined';

/** A `fetch`-compatible function. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** What `onRetry` is told before each wait. */
export interface RetryEvent {
  /** The attempt that just failed (1 = the first); the next one is `attempt + 1`. */
  attempt: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
  /** `network-error`, `timeout`, `in-progress` (a 409 of a key still running) or `status` (408/425/429/5xx). */
  reason: RetryReason;
  /** The status of the failed attempt's response, when there was one. */
  status?: number;
  /** The error of the failed attempt (network error, `TimeoutError`), when there was no response. */
  error?: unknown;
  /** The key sent on every attempt of this call (`undefined` for a safe method without one). */
  key?: string;
  method: string;
  url: string;
}

/** Options of `createIdempotentFetch()`: the key, the attempts, the waits and time-outs of one logical call. */
export interface IdempotentFetchOptions {
  /** The fetch that sends each attempt. Default: `globalThis.fetch`, looked up at each call. */
  fetch?: FetchLike;
  /** Header carrying the key. Default `Idempotency-Key`. */
  headerName?: string;
  /**
   * Key of a call that has none in its headers: a function called once per logical call
   * (default: a random UUID v4), or a fixed string (then every call of this function sends it:
   * useful for a function made for one logical operation). A key already present in the request's
   * headers always wins.
   */
  key?: string | (() => string);
  /** Attempts per call, the first included. Default 5. */
  maxAttempts?: number;
  /** Time-out of one attempt until its response headers arrive, in ms. Default 30 000. */
  timeoutMs?: number;
  /** Overall budget of one call (attempts and waits), in ms. Default: none (bounded by `maxAttempts`). */
  deadlineMs?: number;
  /** Back-off base: the n-th wait is uniform in [0, min(maxDelayMs, baseDelayMs · 2^(n-1))). Default 250. */
  baseDelayMs?: number;
  /** Longest single wait, `Retry-After` included. Default 10 000. */
  maxDelayMs?: number;
  /** Retry GET/HEAD/OPTIONS/TRACE too (without adding a key). Default `true`; `false` passes them through untouched. */
  retrySafeMethods?: boolean;
  /** Called before each wait; may throw to stop the call with that error. */
  onRetry?: (event: RetryEvent) => void;
  /** Source of jitter in [0, 1). Default `Math.random`. */
  random?: () => number;
}

/** @internal Options with their defaults, validated. */
export interface ResolvedClientOptions {
  fetch?: FetchLike;
  headerName: string;
  key?: string | (() => string);
  maxAttempts: number;
  timeoutMs: number;
  deadlineMs?: number;
  baseDelayMs: number;
  maxDelayMs: number;
  retrySafeMethods: boolean;
  onRetry?: (event: RetryEvent) => void;
  random: () => number;
}

/** The defaults of `createIdempotentFetch()`'s options (see `IdempotentFetchOptions`). */
export const CLIENT_DEFAULTS = {
  headerName: 'Idempotency-Key',
  maxAttempts: 5,
  timeoutMs: 30_000,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  retrySafeMethods: true,
} as const;

const HEADER_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** @internal Merges the defaults once and rejects nonsense early, with the option's name. */
export function resolveClientOptions(options: IdempotentFetchOptions = {}): ResolvedClientOptions {
  const o = { ...CLIENT_DEFAULTS, random: Math.random, ...stripUndefined(options) };
  if (!Number.isSafeInteger(o.maxAttempts) || o.maxAttempts < 1) {
    throw new RangeError(OPTION_NOT_POSITIVE_INTEGER('maxAttempts', o.maxAttempts));
  }
  for (const name of ['timeoutMs', 'baseDelayMs', 'maxDelayMs', 'deadlineMs'] as const) {
    const v = o[name];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new RangeError(OPTION_NOT_NON_NEGATIVE(name, v));
    }
  }
  if (o.timeoutMs === 0) throw new RangeError(OPTION_NOT_NON_NEGATIVE('timeoutMs', 0) + ' (> 0)');
  if (typeof o.headerName !== 'string' || !HEADER_TOKEN.test(o.headerName)) {
    throw new TypeError(HEADER_NAME_INVALID(o.headerName));
  }
  for (const name of ['fetch', 'onRetry', 'random'] as const) {
    if (o[name] !== undefined && typeof o[name] !== 'function') {
      throw new TypeError(OPTION_NOT_FUNCTION(name));
    }
  }
  if (o.key !== undefined && typeof o.key !== 'string' && typeof o.key !== 'function') {
    throw new TypeError(OPTION_NOT_FUNCTION('key (or a string)'));
  }
  return o;
}
