import { ReplayCache, type CachedRecord } from '../../lib/persistence/replay.cache';

const record = (bodyBytes: number, hash = 1): CachedRecord => ({
  requestHash: Buffer.alloc(32, hash),
  status: 201,
  headers: '{"h":[]}',
  body: Buffer.alloc(bodyBytes, 7),
});

const cache = (maxBytes: number, maxAgeMs = 60_000) =>
  new ReplayCache({ replayCache: { maxBytes, maxAgeMs, storeTimeoutMs: 100 } });

describe('ReplayCache (bounded by bytes and by time)', () => {
  it('keeps an entry until the shorter of its record lifetime and maxAgeMs', () => {
    const c = cache(1 << 20, 1000);
    const now = performance.now();
    c.set('s', 'short', record(10), 50, now - 60); // the record expired 10 ms ago
    c.set('s', 'long', record(10), 10_000_000, now - 999); // maxAgeMs bounds it: 1 ms left
    c.set('s', 'live', record(10), 10_000, now);
    expect(c.get('s', 'short')).toBeUndefined();
    expect(c.get('s', 'live')?.status).toBe(201);
    const until = performance.now() + 5;
    while (performance.now() < until) {
      // let the 1 ms left on 'long' pass
    }
    expect(c.get('s', 'long')).toBeUndefined();
  });

  it('stays within maxBytes, dropping the least recently used entries first', () => {
    const c = cache(3000);
    const now = performance.now();
    c.set('s', 'a', record(700), 60_000, now);
    c.set('s', 'b', record(700), 60_000, now);
    c.set('s', 'c', record(700), 60_000, now);
    expect(c.get('s', 'a')).toBeDefined(); // a is now the most recently used
    c.set('s', 'd', record(700), 60_000, now);
    expect(c.size).toBeLessThanOrEqual(3000);
    expect(c.get('s', 'b')).toBeUndefined();
    expect(c.get('s', 'a')).toBeDefined();
    expect(c.get('s', 'd')).toBeDefined();
  });

  it('never keeps an answer larger than the whole budget', () => {
    const c = cache(1000);
    c.set('s', 'big', record(5000), 60_000, performance.now());
    expect(c.get('s', 'big')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('separates scopes exactly, whatever characters they contain', () => {
    const c = cache(1 << 20);
    const now = performance.now();
    c.set('t1|x', 'k', record(1, 1), 60_000, now);
    c.set('t1', '|xk', record(1, 2), 60_000, now);
    expect(c.get('t1|x', 'k')!.requestHash[0]).toBe(1);
    expect(c.get('t1', '|xk')!.requestHash[0]).toBe(2);
    expect(c.get('t1|', 'xk')).toBeUndefined();
  });

  it('forgets a key on delete, expired entries on prune, everything on clear; off when disabled', () => {
    const c = cache(1 << 20, 60_000);
    const now = performance.now();
    c.set('s', 'a', record(10), 60_000, now);
    c.set('s', 'gone', record(10), 2, now);
    c.delete('s', 'a');
    expect(c.get('s', 'a')).toBeUndefined();
    const before = c.size;
    expect(before).toBeGreaterThan(0);
    const until = performance.now() + 5;
    while (performance.now() < until) {
      // let the 2 ms of 'gone' pass
    }
    c.prune();
    expect(c.size).toBeLessThan(before);
    c.set('s', 'b', record(10), 60_000, now);
    c.clear();
    expect(c.size).toBe(0);
    const off = new ReplayCache({ replayCache: false });
    off.set('s', 'a', record(10), 60_000, now);
    expect(off.enabled).toBe(false);
    expect(off.get('s', 'a')).toBeUndefined();
  });
});
