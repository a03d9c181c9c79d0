/**
 * Delay before the next attempt after the `attempt`-th failure (1-based): exponential
 * (`baseMs · 2^(attempt-1)`, capped at `maxMs`) with "equal jitter": a uniform value between
 * half of it and all of it, so relays that failed together do not retry together, and no retry
 * comes sooner than half the exponential delay.
 */
export function outboxBackoffMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(0, attempt - 1), 52);
  const ceiling = Math.min(maxMs, baseMs * 2 ** exponent);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
