import { HttpException } from '@nestjs/common';
import { PROBLEM_TYPES, type ProblemException } from '../problem-details';
import type { StoredError } from '../gate/call-gate';
import { GRAPHQL_ERROR_CODES } from './graphql.constants';

/**
 * What a GraphQL client reads in `errors[].extensions` for a gate problem: a `code` (as GraphQL
 * servers name their errors), the problem+json members HTTP sends (`type`, `status`,
 * `retryable`), and `retryAfter` in seconds where HTTP sends a `Retry-After` header.
 */
export interface GraphqlProblemExtensions {
  code: string;
  type: string;
  status: number;
  retryable: boolean;
  retryAfter?: number;
  [key: string]: unknown;
}

/** The gate's problem types that have a GraphQL code of their own. */
const CODED_PROBLEMS = [
  'keyMissing',
  'keyInvalid',
  'inProgress',
  'mismatch',
  'leaseLost',
  'unavailable',
] as const;

const GRAPHQL_CODE_BY_TYPE: ReadonlyMap<string, string> = new Map(
  CODED_PROBLEMS.map((name) => [PROBLEM_TYPES[name], GRAPHQL_ERROR_CODES[name]]),
);

/** The `extensions.code` of a gate problem. */
export function graphqlCodeOf(type: string): string {
  return GRAPHQL_CODE_BY_TYPE.get(type) ?? GRAPHQL_ERROR_CODES.internal;
}

/** The extensions of a gate problem (see GraphqlProblemExtensions). */
export function graphqlProblem(e: ProblemException): GraphqlProblemExtensions {
  const { type, status, retryable } = e.problem;
  const retryAfter = e.headers['Retry-After'];
  return {
    code: graphqlCodeOf(type),
    type,
    status,
    retryable: !!retryable,
    ...(retryAfter === undefined ? {} : { retryAfter: Number(retryAfter) }),
  };
}

/**
 * The GraphQL error a client receives for a gate problem: the problem's `detail` as the message,
 * its extensions as above. `graphql` is loaded when first needed (a GraphQL context means it is
 * installed; apps without GraphQL need not install it), and no type of it is in the library's
 * declarations.
 */
export function toGraphqlError(e: ProblemException): Error {
  const { GraphQLError: Gql } = require('graphql') as typeof import('graphql');
  return new Gql(e.problem.detail ?? e.problem.title, { extensions: graphqlProblem(e) });
}

/**
 * A thrown error that maps to a 4xx (Nest's HttpException and its subclasses, the library's
 * problems), as stored for replay: its status, its response body and its message. Anything
 * else (5xx, a plain Error, a GraphQLError without an HTTP status) releases the key.
 */
export function storableGraphqlError(
  error: unknown,
  storeStatus: (status: number) => boolean,
): StoredError | undefined {
  const e = error as { getStatus?: () => unknown; getResponse?: () => unknown; message?: unknown };
  if (!e || typeof e.getStatus !== 'function' || typeof e.getResponse !== 'function') {
    return undefined;
  }
  const status = e.getStatus();
  if (typeof status !== 'number' || status < 400 || status >= 500 || !storeStatus(status)) {
    return undefined;
  }
  const response = e.getResponse();
  try {
    JSON.stringify(response);
  } catch {
    return undefined;
  }
  return { status, body: { response, message: typeof e.message === 'string' ? e.message : '' } };
}

/**
 * The replay of a stored 4xx: an HttpException of the stored status and response (and message),
 * which the GraphQL driver formats as it formatted the first one (Apollo's code by status,
 * Mercurius' message).
 */
export function replayedGraphqlError(status: number, stored: unknown): Error {
  const body = (stored ?? {}) as { response?: string | Record<string, any>; message?: string };
  const error = new HttpException(body.response ?? '', status);
  if (typeof body.message === 'string' && body.message) error.message = body.message;
  return error;
}
