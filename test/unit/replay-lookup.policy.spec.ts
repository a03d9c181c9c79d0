import { ReplayLookupPolicy } from '../../lib/http/replay-lookup.policy';

describe('ReplayLookupPolicy', () => {
  it('starts off, turns on once more than half of the recent requests were replays, and off again', () => {
    const policy = new ReplayLookupPolicy();
    const endpoint = {};
    expect(policy.lookUpFirst(endpoint)).toBe(false);
    let replays = 0;
    while (!policy.lookUpFirst(endpoint)) {
      policy.observe(endpoint, true);
      replays++;
    }
    // 1 - (31/32)^n > 0.5 first holds at n = 22.
    expect(replays).toBe(22);
    let firsts = 0;
    while (policy.lookUpFirst(endpoint)) {
      policy.observe(endpoint, false);
      firsts++;
    }
    expect(firsts).toBeGreaterThan(0);
    expect(firsts).toBeLessThan(22);
  });

  it('keeps one average per endpoint', () => {
    const policy = new ReplayLookupPolicy(1 / 2);
    const a = {};
    const b = {};
    policy.observe(a, true);
    policy.observe(a, true);
    expect(policy.lookUpFirst(a)).toBe(true);
    expect(policy.lookUpFirst(b)).toBe(false);
    policy.observe(b, false);
    expect(policy.lookUpFirst(b)).toBe(false);
    expect(policy.lookUpFirst(a)).toBe(true);
  });
});
