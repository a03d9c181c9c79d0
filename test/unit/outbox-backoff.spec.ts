import { outboxBackoffMs } from '../../lib/outbox/outbox-backoff';

describe('outbox retry backoff (exponential, equal jitter)', () => {
  it('doubles per attempt from the base, between half and all of it', () => {
    for (let attempt = 1; attempt <= 6; attempt++) {
      const ceiling = 1000 * 2 ** (attempt - 1);
      expect(outboxBackoffMs(attempt, 1000, 1_000_000, () => 0)).toBe(ceiling / 2);
      expect(outboxBackoffMs(attempt, 1000, 1_000_000, () => 1)).toBe(ceiling);
      const r = outboxBackoffMs(attempt, 1000, 1_000_000);
      expect(r).toBeGreaterThanOrEqual(ceiling / 2);
      expect(r).toBeLessThanOrEqual(ceiling);
    }
  });

  it('is capped at the maximum, however many attempts', () => {
    expect(outboxBackoffMs(40, 1000, 300_000, () => 1)).toBe(300_000);
    expect(outboxBackoffMs(10_000, 1000, 300_000, () => 0)).toBe(150_000);
  });

  it('spreads relays that failed together', () => {
    const delays = new Set(Array.from({ length: 50 }, () => outboxBackoffMs(5, 1000, 300_000)));
    expect(delays.size).toBeGreaterThan(10);
  });

  it('a zero base retries at once', () => {
    expect(outboxBackoffMs(3, 0, 0)).toBe(0);
  });
});
