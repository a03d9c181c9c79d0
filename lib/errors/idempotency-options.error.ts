import { ExactlyOnceError } from './exactly-once.error';

/**
 * Options of `IdempotencyModule.forRoot()` / `forRootAsync()` or of `@Idempotent()` that cannot
 * work: thrown when the module is registered or the app boots, its message naming the option
 * and what it must be.
 */
export class IdempotencyOptionsError extends ExactlyOnceError {
  readonly code = 'OPTIONS_INVALID';
}
