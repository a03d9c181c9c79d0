/**
 * `nestjs-exactly-once/client`: the client half of the idempotency contract. No Nest, no
 * database, no Node-only module: usable in Node 20+ and browsers.
 */
export { createIdempotentFetch, uuidV4 } from './idempotent-fetch';
export {
  CLIENT_DEFAULTS,
  type FetchLike,
  type IdempotentFetchOptions,
  type RetryEvent,
} from './idempotent-fetch.options';
export { parseRetryAfter } from './retry-after';
export {
  backoffDelay,
  IN_PROGRESS_PROBLEM_TYPE,
  isRetryableStatus,
  LEASE_LOST_PROBLEM_TYPE,
  retryDelay,
  retryReasonOf,
  type RetryReason,
  SAFE_METHODS,
} from './retry-policy';
