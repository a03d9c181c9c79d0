import { resolveOptions } from '../../lib/idempotency-options.resolver';
import { inboxBackoffProblem, inboxRetryDelayMs } from '../../lib/inbox/inbox-backoff';
import { InboxRetryTimers } from '../../lib/inbox/inbox-retry.timers';

describe('inbox retry delay', () => {
  const o = { backoffBaseMs: 1000, backoffMaxMs: 60_000 };

  it('grows with the failed attempts (equal jitter: between half and all of base · 2^(n-1)), capped', () => {
    for (const [attempts, ceiling] of [
      [1, 1000],
      [2, 2000],
      [3, 4000],
      [7, 60_000],
      [40, 60_000],
    ]) {
      for (let i = 0; i < 20; i++) {
        const d = inboxRetryDelayMs(attempts, o);
        expect(d).toBeGreaterThanOrEqual(ceiling / 2);
        expect(d).toBeLessThanOrEqual(ceiling);
      }
    }
    // Unknown count (the database failed, not the message): the first step.
    expect(inboxRetryDelayMs(0, o)).toBeLessThanOrEqual(1000);
  });

  it('has safe defaults and refuses invalid options at boot, naming them', () => {
    expect(resolveOptions().inbox).toMatchObject({ backoffBaseMs: 1000, backoffMaxMs: 60_000 });
    expect(() => resolveOptions({ inbox: { backoffBaseMs: 500, backoffMaxMs: 100 } })).toThrow(
      /backoffMaxMs/,
    );
    expect(() => resolveOptions({ inbox: { backoffBaseMs: -1 } })).toThrow(/backoffBaseMs/);
    expect(inboxBackoffProblem({ backoffBaseMs: 0, backoffMaxMs: 0 })).toBeUndefined();
    expect(inboxBackoffProblem({ backoffBaseMs: 1, backoffMaxMs: Infinity })).toBeDefined();
  });
});

describe('InboxRetryTimers', () => {
  it('on shutdown stops every delay and abandons it (a held delivery is left to the channel close), and ends in-place waits', async () => {
    const timers = new InboxRetryTimers();
    const seen: string[] = [];
    timers.later(
      3_600_000,
      () => seen.push('released a'),
      () => seen.push('abandoned a'),
    );
    timers.later(3_600_000, () => seen.push('released b'));
    const waited = timers.sleep(3_600_000);
    expect(timers.size).toBe(3);
    timers.onModuleDestroy();
    expect(seen).toEqual(['abandoned a']);
    await expect(waited).resolves.toBe(false);
    expect(timers.size).toBe(0);
    // After shutdown nothing is held or released any more.
    timers.later(
      0,
      () => seen.push('released c'),
      () => seen.push('abandoned c'),
    );
    expect(seen).toEqual(['abandoned a', 'abandoned c']);
  });

  it('releases after the delay', async () => {
    const timers = new InboxRetryTimers();
    await expect(timers.sleep(5)).resolves.toBe(true);
    const released = await new Promise<boolean>((r) => timers.later(5, () => r(true)));
    expect(released).toBe(true);
  });
});
