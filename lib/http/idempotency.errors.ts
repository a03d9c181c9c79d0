import { HttpException } from '@nestjs/common';

/** Stable `type` URIs of the library's problem+json answers (RFC 9457). */
export const PROBLEM_TYPES = {
  keyMissing: 'urn:nestjs-exactly-once:problem:idempotency-key-missing',
  keyInvalid: 'urn:nestjs-exactly-once:problem:idempotency-key-invalid',
  inProgress: 'urn:nestjs-exactly-once:problem:idempotency-request-in-progress',
  mismatch: 'urn:nestjs-exactly-once:problem:idempotency-key-reused',
  leaseLost: 'urn:nestjs-exactly-once:problem:idempotency-lease-lost',
  bodyTooDeep: 'urn:nestjs-exactly-once:problem:request-body-too-deep',
  notSnapshottable: 'urn:nestjs-exactly-once:problem:response-not-snapshottable',
  responseTooLarge: 'urn:nestjs-exactly-once:problem:response-too-large',
  unavailable: 'urn:nestjs-exactly-once:problem:service-unavailable',
  storedResponseUnreadable: 'urn:nestjs-exactly-once:problem:stored-response-unreadable',
  preconditionFailed: 'urn:nestjs-exactly-once:problem:precondition-failed',
  preconditionRequired: 'urn:nestjs-exactly-once:problem:precondition-required',
  misconfigured: 'urn:nestjs-exactly-once:problem:misconfigured',
} as const;

/** An RFC 9457 problem details object. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** The request path the problem occurred on (set when the answer is written). */
  instance?: string;
  /**
   * Whether the same request (with the same Idempotency-Key) may succeed when sent again later,
   * so clients need not parse `type`: true for 409 in progress / superseded, 408, 425, 429, 502,
   * 503 and 504; false for everything else.
   */
  retryable?: boolean;
  [extension: string]: unknown;
}

const RETRYABLE_TYPES: ReadonlySet<string> = new Set([
  PROBLEM_TYPES.inProgress,
  PROBLEM_TYPES.leaseLost,
]);
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 502, 503, 504]);

/** Whether a problem of this type and status may succeed on a retry of the same request. */
export const isRetryableProblem = (type: string, status: number): boolean =>
  RETRYABLE_TYPES.has(type) || RETRYABLE_STATUSES.has(status);

/**
 * An HttpException whose body is problem+json. The library's exception filter writes it with
 * `Content-Type: application/problem+json`, any extra headers (e.g. `Retry-After`) and the
 * request path as `instance`. `retryable` is filled in from the type and status when not given.
 */
export class ProblemException extends HttpException {
  constructor(
    readonly problem: ProblemDetails,
    readonly headers: Record<string, string> = {},
  ) {
    problem.retryable ??= isRetryableProblem(problem.type, problem.status);
    super(problem, problem.status);
  }
}

const problem = (
  status: number,
  type: string,
  title: string,
  detail: string,
  headers?: Record<string, string>,
  ext?: object,
) => new ProblemException({ type, title, status, detail, ...ext }, headers);

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

export const keyReused = (status: 409 | 422) =>
  problem(
    status,
    PROBLEM_TYPES.mismatch,
    'Idempotency-Key reused',
    'This Idempotency-Key was already used with a different request (method, route, query, headers or body). Use a new key for a new request.',
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

export const serviceUnavailable = (detail: string) =>
  problem(503, PROBLEM_TYPES.unavailable, 'Service unavailable', detail, { 'Retry-After': '1' });

export const storedResponseUnreadable = () =>
  problem(
    500,
    PROBLEM_TYPES.storedResponseUnreadable,
    'Stored response cannot be replayed',
    'The response stored for this Idempotency-Key cannot be decoded (it was sealed with another encryption key, or altered). The request was not run again.',
  );

/** A configuration error of the app (see `isMisconfiguration`): 500, not retryable, no `Retry-After`. */
export const misconfigured = () =>
  problem(
    500,
    PROBLEM_TYPES.misconfigured,
    'Server misconfigured',
    'The server is misconfigured; nothing of this request was saved. Retrying will not help until the configuration is fixed.',
  );
