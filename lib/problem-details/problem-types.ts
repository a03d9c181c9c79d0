/**
 * Stable `type` URIs of every problem+json answer of the library (RFC 9457), for every feature:
 * the gate, conditional requests, the admin API and the errors all of them share. One list, so
 * that a type is never defined twice. No Nest import: the client (`nestjs-exactly-once/client`)
 * reads it too.
 */
export const PROBLEM_TYPES = {
  // The HTTP idempotency gate
  keyMissing: 'urn:nestjs-exactly-once:problem:idempotency-key-missing',
  keyInvalid: 'urn:nestjs-exactly-once:problem:idempotency-key-invalid',
  inProgress: 'urn:nestjs-exactly-once:problem:idempotency-request-in-progress',
  mismatch: 'urn:nestjs-exactly-once:problem:idempotency-key-reused',
  leaseLost: 'urn:nestjs-exactly-once:problem:idempotency-lease-lost',
  bodyTooDeep: 'urn:nestjs-exactly-once:problem:request-body-too-deep',
  notSnapshottable: 'urn:nestjs-exactly-once:problem:response-not-snapshottable',
  responseTooLarge: 'urn:nestjs-exactly-once:problem:response-too-large',
  storedResponseUnreadable: 'urn:nestjs-exactly-once:problem:stored-response-unreadable',
  storedResponseKeyUnknown: 'urn:nestjs-exactly-once:problem:stored-response-key-unknown',
  storedResponseNotEncrypted: 'urn:nestjs-exactly-once:problem:stored-response-not-encrypted',
  // The inbox: a duplicate request to a @MessagePattern handler (no reply stored to replay)
  inboxReplyNotStored: 'urn:nestjs-exactly-once:problem:inbox-reply-not-stored',
  // Every feature
  unavailable: 'urn:nestjs-exactly-once:problem:service-unavailable',
  misconfigured: 'urn:nestjs-exactly-once:problem:misconfigured',
  // Conditional requests (ETag / If-Match)
  preconditionFailed: 'urn:nestjs-exactly-once:problem:precondition-failed',
  preconditionRequired: 'urn:nestjs-exactly-once:problem:precondition-required',
  preconditionInvalid: 'urn:nestjs-exactly-once:problem:precondition-header-invalid',
  // The admin API
  adminInvalidRequest: 'urn:nestjs-exactly-once:problem:admin-invalid-request',
  adminNotFound: 'urn:nestjs-exactly-once:problem:admin-not-found',
  adminConflict: 'urn:nestjs-exactly-once:problem:admin-conflict',
  adminCrossSite: 'urn:nestjs-exactly-once:problem:admin-cross-site-request',
} as const;

const RETRYABLE_TYPES: ReadonlySet<string> = new Set([
  PROBLEM_TYPES.inProgress,
  PROBLEM_TYPES.leaseLost,
]);
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 502, 503, 504]);

/** Whether a problem of this type and status may succeed on a retry of the same request. */
export const isRetryableProblem = (type: string, status: number): boolean =>
  RETRYABLE_TYPES.has(type) || RETRYABLE_STATUSES.has(status);
