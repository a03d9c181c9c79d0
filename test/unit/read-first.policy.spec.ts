import { ReadFirstPolicy } from '../../lib/persistence/read-first.policy';

describe('ReadFirstPolicy', () => {
  it('starts off, turns on once more than half of the recent requests were replays, and off again', () => {
    const policy = new ReadFirstPolicy();
    const endpoint = {};
    expect(policy.readFirst(endpoint)).toBe(false);
    let replays = 0;
    while (!policy.readFirst(endpoint)) {
      policy.observe(endpoint, true);
      replays++;
    }
    // 1 - (31/32)^n > 0.5 first holds at n = 22.
    expect(replays).toBe(22);
    let firsts = 0;
    while (policy.readFirst(endpoint)) {
      policy.observe(endpoint, false);
      firsts++;
    }
    expect(firsts).toBeGreaterThan(0);
    expect(firsts).toBeLessThan(22);
  });

  it('keeps one average per endpoint', () => {
    const policy = new ReadFirstPolicy(1 / 2);
    const a = {};
    const b = {};
    policy.observe(a, true);
    policy.observe(a, true);
    expect(policy.readFirst(a)).toBe(true);
    expect(policy.readFirst(b)).toBe(false);
    policy.observe(b, false);
    expect(policy.readFirst(b)).toBe(false);
    expect(policy.readFirst(a)).toBe(true);
  });

  it('keys by value for string subjects (inbox consumer names)', () => {
    const policy = new ReadFirstPolicy(1 / 2);
    policy.observe('ledger', true);
    policy.observe(`led${'ger'}`, true);
    expect(policy.readFirst('ledger')).toBe(true);
    expect(policy.readFirst('shipping')).toBe(false);
  });
});
