import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { REPLAYED_HEADER } from '../idempotency.constants';
import { ProblemException } from './idempotency.errors';
import { sendRaw } from './http-platform';
import type { ResponseSnapshot } from './response-snapshot';

/** @internal Thrown by the gate to answer with a stored response. */
export class ReplayResponse {
  // Not an Error: a replay is an answer, and capturing a stack trace per replay is wasted work.
  constructor(readonly snapshot: ResponseSnapshot) {}
}

/** Writes a problem+json answer on either platform. */
export function sendProblem(res: any, e: ProblemException): void {
  sendRaw(res, ...problemAnswer(e));
}

/** Header set on a replay whose body was over `maxResponseBytes` and not stored (`store-status-only`). */
export const BODY_OMITTED_HEADER = 'Idempotency-Replay-Body-Omitted';

/** Status, headers and body of a replayed answer: the stored ones plus `Idempotency-Replayed: true`. */
export function replayAnswer(s: ResponseSnapshot): [number, Array<[string, string]>, Buffer] {
  const headers: Array<[string, string]> = [...s.headers, [REPLAYED_HEADER, 'true']];
  if (s.bodyOmitted) headers.push([BODY_OMITTED_HEADER, 'true']);
  return [s.status, headers, s.body ?? Buffer.alloc(0)];
}

/** Status, headers and body of a problem+json answer. */
export function problemAnswer(e: ProblemException): [number, Array<[string, string]>, string] {
  return [
    e.problem.status,
    [['Content-Type', 'application/problem+json'], ...Object.entries(e.headers)],
    JSON.stringify(e.problem),
  ];
}

/** Writes a stored answer byte for byte, with `Idempotency-Replayed: true`. */
export function sendReplay(res: any, s: ResponseSnapshot): void {
  sendRaw(res, ...replayAnswer(s));
}

/**
 * Method-scoped (through `@Idempotent()`), so it takes precedence over the app's global
 * filters for the gate's own answers: replays and problem+json errors. Everything else
 * thrown by the handler goes to the app's filters as usual.
 */
@Catch(ReplayResponse, ProblemException)
export class IdempotencyExceptionFilter implements ExceptionFilter {
  catch(exception: ReplayResponse | ProblemException, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse();
    if (exception instanceof ReplayResponse) sendReplay(res, exception.snapshot);
    else sendProblem(res, exception);
  }
}
