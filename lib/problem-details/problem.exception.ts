import { HttpException } from '@nestjs/common';
import { isRetryableProblem, PROBLEM_TYPES } from './problem-types';

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

/**
 * Builds a ProblemException; the factories of each feature (`inProgress()`, `preconditionFailed()`,
 * the admin API's errors) are written with it.
 * @internal
 */
export const problem = (
  status: number,
  type: string,
  title: string,
  detail: string,
  headers?: Record<string, string>,
  ext?: object,
): ProblemException => new ProblemException({ type, title, status, detail, ...ext }, headers);

/**
 * 503 with `Retry-After: 1`: the database (or another dependency) is unavailable right now.
 * @internal
 */
export const serviceUnavailable = (detail: string): ProblemException =>
  problem(503, PROBLEM_TYPES.unavailable, 'Service unavailable', detail, { 'Retry-After': '1' });

/**
 * A configuration error of the app (see `isMisconfiguration`): 500, not retryable, no `Retry-After`.
 * @internal
 */
export const misconfigured = (): ProblemException =>
  problem(
    500,
    PROBLEM_TYPES.misconfigured,
    'Server misconfigured',
    'The server is misconfigured; nothing of this request was saved. Retrying will not help until the configuration is fixed.',
  );
