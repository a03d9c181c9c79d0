/** @internal */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** @internal How {@link retryWithJitter} retries. */
export interface JitteredRetry {
  /** Attempts in all (the first one included). */
  tries: number;
  /** Attempt `n` failed: wait `n * stepMs + random() * jitterMs` before the next one. */
  stepMs: number;
  jitterMs: number;
  /** Whether this error is worth another attempt (a deadlock victim, a lock time-out…). */
  retryable(error: unknown): boolean;
  /** Told when the last attempt failed with an error that was still retryable. */
  exhausted?(error: unknown, attempts: number): void;
}

/**
 * Runs `fn` until it succeeds, its error is not retryable, or `tries` attempts failed; waits a
 * growing, jittered delay between attempts (so that two transactions that deadlocked each other
 * do not collide again). Rethrows the last error.
 * @internal
 */
export async function retryWithJitter<T>(
  fn: (attempt: number) => Promise<T>,
  policy: JitteredRetry,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (!policy.retryable(e)) throw e;
      if (attempt >= policy.tries) {
        policy.exhausted?.(e, attempt);
        throw e;
      }
      await sleep(policy.stepMs * attempt + Math.random() * policy.jitterMs);
    }
  }
}
