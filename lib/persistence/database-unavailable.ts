import { QueryFailedError, QueryRunnerAlreadyReleasedError } from 'typeorm';
import {
  isConnectionLostDriverError,
  isUnavailableDriverError,
  someCause,
} from './dialects/driver-errors';

/**
 * Whether an error means "the database could not do this right now" (connection refused, lost
 * or reset, server shutting down, too many connections, a deadlock victim, a lock or connect
 * time-out, a SQLite file busy), as opposed to a fault of the request or of the code: answered
 * 503 with Retry-After rather than 500, since the same request (with the same Idempotency-Key)
 * can succeed a moment later and nothing of it was committed.
 * The drivers' forms (socket codes, SQLSTATEs, errnos, error numbers) are listed in
 * dialects/driver-errors.ts; this walks the error and its causes.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return someCause(error, isUnavailableDriverError);
}

/**
 * Whether a statement failed because the database connection under it ended (reset, closed, the
 * session killed, the server stopped), so a transaction on it is lost whatever the statement
 * was. Only errors of database statements count (a TypeORM QueryFailedError or a released query
 * runner): a socket error of some other client (an HTTP call in a handler) is not the database's.
 */
export function isDatabaseConnectionLost(error: unknown): boolean {
  if (someCause(error, (e) => e instanceof QueryRunnerAlreadyReleasedError)) return true;
  return (
    someCause(error, (e) => e instanceof QueryFailedError) &&
    someCause(error, isConnectionLostDriverError)
  );
}
