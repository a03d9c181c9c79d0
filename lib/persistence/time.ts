/** Milliseconds as a whole number of seconds for Retry-After (at least 1). */
export const toRetryAfterSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));
