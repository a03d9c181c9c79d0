import { problem, PROBLEM_TYPES } from '../problem-details';
import { STORED_RESPONSE_KEY_UNKNOWN, STORED_RESPONSE_NOT_ENCRYPTED } from './idempotency.messages';

// Factories of the gate's problem+json answers; the one list of types is in `problem-details/`.

export const missingKey = (header: string | undefined) =>
  problem(
    400,
    PROBLEM_TYPES.keyMissing,
    'Idempotency-Key missing',
    header
      ? `This endpoint requires an ${header} header.`
      : 'This endpoint requires an idempotency key, and none was found in the request.',
  );

export const invalidKey = (why: string, source = 'The Idempotency-Key header') =>
  problem(
    400,
    PROBLEM_TYPES.keyInvalid,
    'Invalid Idempotency-Key',
    `${source} is invalid: ${why}.`,
  );

export const inProgress = (retryAfterSeconds: number) =>
  problem(
    409,
    PROBLEM_TYPES.inProgress,
    'Request in progress',
    'A request with this Idempotency-Key is still being processed. Retry after the indicated delay with the same key.',
    { 'Retry-After': String(retryAfterSeconds) },
  );

export const keyReused = (status: 409 | 422, parts = 'method, route, query, headers or body') =>
  problem(
    status,
    PROBLEM_TYPES.mismatch,
    'Idempotency-Key reused',
    `This Idempotency-Key was already used with a different request (${parts}). Use a new key for a new request.`,
  );

export const leaseLost = () =>
  problem(
    409,
    PROBLEM_TYPES.leaseLost,
    'Request superseded',
    'The reservation of this Idempotency-Key expired while the request ran and was taken over by a retry; this attempt was rolled back.',
    { 'Retry-After': '1' },
  );

export const bodyTooDeep = (max: number) =>
  problem(
    400,
    PROBLEM_TYPES.bodyTooDeep,
    'Request body too deeply nested',
    `JSON nesting deeper than ${max} levels is not accepted.`,
  );

export const notSnapshottable = (what: string) =>
  problem(
    500,
    PROBLEM_TYPES.notSnapshottable,
    'Response cannot be stored',
    `An @Idempotent() endpoint answered with ${what}, which cannot be stored for replay; nothing was committed.`,
  );

export const responseTooLarge = (size: number, max: number) =>
  problem(
    500,
    PROBLEM_TYPES.responseTooLarge,
    'Response too large to store',
    `The response body (${size} bytes) exceeds the stored-response limit (${max} bytes); nothing was committed.`,
  );

export const storedResponseUnreadable = () =>
  problem(
    500,
    PROBLEM_TYPES.storedResponseUnreadable,
    'Stored response cannot be replayed',
    'The response stored for this Idempotency-Key cannot be decoded (it was sealed with another encryption key, or altered). The request was not run again.',
  );

/** 500: the stored answer is sealed under a key id no longer in the ring (named in `keyId`). */
export const storedResponseKeyUnknown = (keyId: string) =>
  problem(
    500,
    PROBLEM_TYPES.storedResponseKeyUnknown,
    'Stored response sealed under an unknown key',
    STORED_RESPONSE_KEY_UNKNOWN(keyId),
    undefined,
    { keyId },
  );

/** 500: the stored answer is plaintext while encryption keys are set (no `acceptPlaintext`). */
export const storedResponseNotEncrypted = () =>
  problem(
    500,
    PROBLEM_TYPES.storedResponseNotEncrypted,
    'Stored response is not encrypted',
    STORED_RESPONSE_NOT_ENCRYPTED,
  );
