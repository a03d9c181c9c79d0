import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import { isMisconfiguration } from '../persistence/database-misconfigured';
import { isDatabaseUnavailable } from '../persistence/database-unavailable';
import { requestPath, sendRaw } from '../internal/http-platform';
import { misconfigured, ProblemException, serviceUnavailable } from './problem.exception';
import { isRetryableProblem } from './problem-types';

/**
 * A global filter that answers every error as `application/problem+json` (RFC 9457):
 * HttpExceptions keep their status and message (validation messages become `errors`), a
 * configuration error (a missing table, see `isMisconfiguration`) is a 500 `…:misconfigured`
 * without `Retry-After`, a database that is unavailable right now (connection lost, deadlock victim, lock time-out) is a 503 with
 * `Retry-After`, anything else is a 500 without internals. Optional: `app.useGlobalFilters(new ProblemDetailsFilter())`.
 */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('ProblemDetails');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    const http = host.switchToHttp();
    const raw: ServerResponse = http.getResponse().raw ?? http.getResponse();
    if (raw.headersSent) {
      // Too late for an answer (a body was streaming): log as usual and end what was sent.
      this.toProblem(exception);
      if (!raw.writableEnded) raw.end();
      return;
    }
    const { status, body, headers } = this.toProblem(exception);
    const problem: Record<string, unknown> = { ...body, instance: requestPath(http.getRequest()) };
    problem.retryable ??= isRetryableProblem(String(problem.type), status);
    sendRaw(
      http.getResponse(),
      status,
      [['Content-Type', 'application/problem+json'], ...headers],
      JSON.stringify(problem),
    );
  }

  /** The problem+json answer for an exception: its status, body and headers. Override to map exceptions of your own. */
  protected toProblem(exception: unknown): {
    status: number;
    body: object;
    headers: Array<[string, string]>;
  } {
    if (exception instanceof ProblemException) {
      return {
        status: exception.problem.status,
        body: exception.problem,
        headers: Object.entries(exception.headers),
      };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const response = exception.getResponse();
      const message = typeof response === 'string' ? response : (response as any)?.message;
      const errors = Array.isArray(message) ? message : undefined;
      const detail = errors
        ? errors.join('; ')
        : typeof message === 'string'
          ? message
          : exception.message;
      return {
        status,
        body: {
          type: 'about:blank',
          title: STATUS_CODES[status] ?? 'Error',
          status,
          detail,
          ...(errors ? { errors } : {}),
        },
        headers: [],
      };
    }
    const clientError = clientErrorStatus(exception);
    if (clientError) {
      // Errors of body parsers and other middleware (http-errors style: 413 entity too large,
      // 400 malformed JSON, 415 unsupported charset) are the client's, not the server's.
      const status = clientError;
      const detail =
        (exception as { message?: string }).message || STATUS_CODES[status] || 'Bad request';
      return {
        status,
        body: { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail },
        headers: [],
      };
    }
    if (isMisconfiguration(exception)) {
      // A table or column missing, the transactional plugin missing, a write outside the
      // request's transaction: a bug of the deployment, which a retry cannot fix (500, not 503).
      this.logger.error(exception instanceof Error ? exception.message : String(exception));
      return this.toProblem(misconfigured());
    }
    if (isDatabaseUnavailable(exception)) {
      // Connection lost, server restarting, deadlock victim, lock time-out…: nothing of the
      // request was committed and the same request can succeed a moment later.
      this.logger.warn(
        `database unavailable: ${exception instanceof Error ? exception.message : String(exception)}`,
      );
      return this.toProblem(
        serviceUnavailable(
          'The database is unavailable right now; nothing of this request was saved. Retry it (with the same Idempotency-Key, where the endpoint takes one).',
        ),
      );
    }
    this.logger.error(exception instanceof Error ? exception.stack : String(exception));
    return {
      status: 500,
      body: {
        type: 'about:blank',
        title: 'Internal Server Error',
        status: 500,
        detail: 'An unexpected error occurred.',
      },
      headers: [],
    };
  }
}

function clientErrorStatus(e: unknown): number | undefined {
  if (!e || typeof e !== 'object') return undefined;
  const o = e as { status?: unknown; statusCode?: unknown; expose?: unknown };
  const status =
    typeof o.status === 'number'
      ? o.status
      : typeof o.statusCode === 'number'
        ? o.statusCode
        : undefined;
  return status !== undefined && status >= 400 && status < 500 && o.expose !== false
    ? status
    : undefined;
}
