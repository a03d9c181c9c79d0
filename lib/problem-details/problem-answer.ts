import { sendRaw } from '../internal/http-platform';
import type { ProblemException } from './problem.exception';

/**
 * Status, headers and body of a problem+json answer; `instance` is the request path.
 * @internal
 */
export function problemAnswer(
  e: ProblemException,
  instance?: string,
): [number, Array<[string, string]>, string] {
  const body = instance === undefined ? e.problem : { ...e.problem, instance };
  return [
    e.problem.status,
    [['Content-Type', 'application/problem+json'], ...Object.entries(e.headers)],
    JSON.stringify(body),
  ];
}

/**
 * Writes a problem+json answer on either platform (Express or Fastify).
 * @internal
 */
export function sendProblem(res: any, e: ProblemException, instance?: string): void {
  sendRaw(res, ...problemAnswer(e, instance));
}
