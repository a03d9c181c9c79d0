import { ExactlyOnceError } from '../errors/exactly-once.error';
import { isMisconfiguredDriverError, someCause } from './dialects/driver-errors';

/**
 * A configuration error of the app (the library's tables missing or at an older migration, the
 * nestjs-cls transactional plugin missing, a write outside the request's transaction): a bug of
 * the deployment, not of the request and not a passing outage. Answered 500
 * (`urn:nestjs-exactly-once:problem:misconfigured`, no `Retry-After`): retrying cannot help.
 */
export class IdempotencyMisconfiguredError extends ExactlyOnceError {
  readonly code = 'MISCONFIGURED';
}

/**
 * Whether an error means "the app is wired wrong": one of the library's configuration errors,
 * or a database error saying that a table, column or schema does not exist.
 * The drivers' forms are listed in dialects/driver-errors.ts.
 */
export function isMisconfiguration(error: unknown): boolean {
  return someCause(
    error,
    (e) => e instanceof IdempotencyMisconfiguredError || isMisconfiguredDriverError(e),
  );
}
