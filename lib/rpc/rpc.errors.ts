import type { ProblemException } from '../problem-details';

/**
 * What an RPC caller receives for a problem: the problem+json members HTTP sends (`type`,
 * `title`, `status`, `detail`, `retryable`), and `retryAfter` in seconds where HTTP sends a
 * `Retry-After` header.
 */
export interface RpcProblem {
  type: string;
  title: string;
  status: number;
  detail: string;
  retryable: boolean;
  retryAfter?: number;
}

/** The RpcException payload of a gate problem (see RpcProblem). */
export function rpcProblem(e: ProblemException): RpcProblem {
  const { type, title, status, detail, retryable } = e.problem as RpcProblem;
  const retryAfter = e.headers['Retry-After'];
  return {
    type,
    title,
    status,
    detail,
    retryable: !!retryable,
    ...(retryAfter === undefined ? {} : { retryAfter: Number(retryAfter) }),
  };
}
