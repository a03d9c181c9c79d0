import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { throwError } from 'rxjs';
import { rpcProblem } from '../rpc/rpc.errors';
import { REPLAYED_HEADER } from '../idempotency.constants';
import { requestPath, sendRaw } from '../internal/http-platform';
import { ProblemException, sendProblem } from '../problem-details';
import type { ResponseSnapshot } from './response-snapshot';

/** The gate's own headers on a replayed answer (names are endpoint options). */
export interface ReplayHeaders {
  /** Set to `true` on every replay (`replayedHeaderName`). */
  replayed: string;
  /** Set to `replayed` when the opt-in `statusHeader` is on. */
  status?: string;
}

const DEFAULT_REPLAY_HEADERS: ReplayHeaders = { replayed: REPLAYED_HEADER };

/** @internal Thrown by the gate to answer with a stored response. */
export class ReplayResponse {
  // Not an Error: a replay is an answer, and capturing a stack trace per replay is wasted work.
  constructor(
    readonly snapshot: ResponseSnapshot,
    readonly headers: ReplayHeaders = DEFAULT_REPLAY_HEADERS,
  ) {}
}

/** Header set on a replay whose body was over `maxResponseBytes` and not stored (`store-status-only`). */
export const BODY_OMITTED_HEADER = 'Idempotency-Replay-Body-Omitted';

/** Status, headers and body of a replayed answer: the stored ones plus `Idempotency-Replayed: true`. */
export function replayAnswer(
  s: ResponseSnapshot,
  h: ReplayHeaders = DEFAULT_REPLAY_HEADERS,
): [number, Array<[string, string]>, Buffer] {
  const headers: Array<[string, string]> = [...s.headers, [h.replayed, 'true']];
  if (h.status) headers.push([h.status, 'replayed']);
  if (s.bodyOmitted) headers.push([BODY_OMITTED_HEADER, 'true']);
  return [s.status, headers, s.body ?? Buffer.alloc(0)];
}

/** Writes a stored answer byte for byte, with `Idempotency-Replayed: true`. */
export function sendReplay(res: any, s: ResponseSnapshot, h?: ReplayHeaders): void {
  sendRaw(res, ...replayAnswer(s, h));
}

/**
 * Method-scoped (through `@Idempotent()`), so it takes precedence over the app's global
 * filters for the gate's own answers: replays and problem+json errors. Everything else
 * thrown by the handler goes to the app's filters as usual.
 */
@Catch(ReplayResponse, ProblemException)
export class IdempotencyExceptionFilter implements ExceptionFilter {
  catch(exception: ReplayResponse | ProblemException, host: ArgumentsHost): unknown {
    // A microservice handler under @Idempotent() that throws a problem itself (the RPC adapter
    // turns its own into RpcException): the caller gets the problem, as an RPC error.
    if (host.getType() === 'rpc' && exception instanceof ProblemException) {
      return throwError(() => rpcProblem(exception));
    }
    // A GraphQL resolver under @Idempotent() that throws a problem itself: left to the GraphQL
    // driver, which formats it as it formats any HttpException (there is no response to write).
    if (host.getType<string>() === 'graphql') throw exception;
    const http = host.switchToHttp();
    const res = http.getResponse();
    if (exception instanceof ReplayResponse) sendReplay(res, exception.snapshot, exception.headers);
    else sendProblem(res, exception, requestPath(http.getRequest()));
  }
}
