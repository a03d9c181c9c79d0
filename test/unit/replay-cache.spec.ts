import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ReplayCache, type CachedRecord } from '../../lib/persistence/replay.cache';

setFlagsFromString('--expose-gc');

const record = (bodyBytes: number, hash = 1): CachedRecord => ({
  requestHash: Buffer.alloc(32, hash),
  status: 201,
  headers: '{"h":[]}',
  body: Buffer.alloc(bodyBytes, 7),
});

const cache = (maxBytes: number, maxAgeMs = 60_000) =>
  new ReplayCache({ replayCache: { maxBytes, maxAgeMs, storeTimeoutMs: 100 } });

/** A budget that `entries` entries of a 700-byte answer (keys of up to 3 characters) fit, one more does not. */
const budgetFor = (entries: number): number => {
  const one = cache(1 << 20);
  one.set('s', 'key', record(700), 60_000, performance.now());
  return Math.floor((entries + 0.5) * one.size);
};

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
    const budget = budgetFor(3);
    const c = cache(budget);
    const now = performance.now();
    c.set('s', 'a', record(700), 60_000, now);
    c.set('s', 'b', record(700), 60_000, now);
    c.set('s', 'c', record(700), 60_000, now);
    expect(c.get('s', 'a')).toBeDefined(); // a is now the most recently used
    c.set('s', 'd', record(700), 60_000, now);
    expect(c.size).toBeLessThanOrEqual(budget);
    expect(c.get('s', 'b')).toBeUndefined();
    expect(c.get('s', 'a')).toBeDefined();
    expect(c.get('s', 'c')).toBeDefined();
    expect(c.get('s', 'd')).toBeDefined();
  });

  it('moves a hit to the most recently used end only from the older half of the order', () => {
    const budget = budgetFor(8);
    const c = cache(budget);
    const now = performance.now();
    for (let i = 0; i < 8; i++) c.set('s', `e${i}`, record(700), 60_000, now);
    expect(c.get('s', 'e6')).toBeDefined(); // in the newer half: stays where it is
    expect(c.get('s', 'e1')).toBeDefined(); // in the older half: now the most recently used
    // Order now: e0 e2 e3 e4 e5 e6 e7 e1. Six more drop the first six: e1 survives, and so does
    // e7, which was inserted after e6 (the approximation: e6's hit did not move it).
    for (let i = 8; i < 14; i++) c.set('s', `e${i}`, record(700), 60_000, now);
    expect(c.size).toBeLessThanOrEqual(budget);
    for (const k of ['e0', 'e2', 'e3', 'e4', 'e5', 'e6']) expect(c.get('s', k)).toBeUndefined();
    for (const k of ['e7', 'e1', 'e8', 'e9', 'e10', 'e11', 'e12', 'e13'])
      expect(c.get('s', k)).toBeDefined();
  });

  it('frees a sixteenth of its budget at once when full, the oldest first, never the new entry', () => {
    // Entries of one size (keys of 3 characters, as in budgetFor): 64 fit; the 65th frees room
    // down to 15/16 of the budget in one pass, and the next ones are stored without dropping any.
    const k = (i: number) => `k${String(i).padStart(2, '0')}`;
    const budget = budgetFor(64);
    const c = cache(budget);
    const now = performance.now();
    c.set('s', k(0), record(700), 60_000, now);
    const one = c.size;
    for (let i = 1; i < 64; i++) c.set('s', k(i), record(700), 60_000, now);
    expect(c.size).toBe(64 * one);
    c.set('s', k(64), record(700), 60_000, now);
    const fits = Math.floor((budget * 15) / 16 / one);
    expect(fits).toBeLessThan(63); // more than one entry went in that pass
    expect(c.size).toBe(fits * one);
    const kept = Array.from({ length: 65 }, (_, i) => k(i)).filter((key) => c.get('s', key));
    expect(kept).toEqual(Array.from({ length: fits }, (_, i) => k(65 - fits + i)));
    for (let i = 65; i < 65 + 64 - fits; i++) c.set('s', k(i), record(700), 60_000, now);
    expect(c.size).toBe(64 * one); // nothing dropped since
    // An answer that fits the budget but not the low-water mark is kept, alone.
    const small = cache(budgetFor(1));
    small.set('s', 'old', record(700), 60_000, now);
    small.set('s', 'new', record(700), 60_000, now);
    expect(small.get('s', 'old')).toBeUndefined();
    expect(small.get('s', 'new')).toBeDefined();
  });

  it("keeps each record's bytes in a buffer of its own, never a view of Node's shared pool", () => {
    const c = cache(1 << 20);
    // Buffers under 4 KiB are views of shared 8 KiB pool blocks, as the capture's and the
    // driver's are.
    const body = Buffer.from('{"id":"p-1","amount":5}');
    const requestHash = Buffer.from('a'.repeat(32));
    expect(body.buffer.byteLength).toBeGreaterThan(body.length);
    c.set('s', 'k', { requestHash, status: 201, headers: null, body }, 60_000, performance.now());
    body.fill(0); // the caller's buffers are theirs: the entry is a copy
    const hit = c.get('s', 'k')!;
    expect(hit.body!.toString()).toBe('{"id":"p-1","amount":5}');
    expect(hit.requestHash.toString()).toBe('a'.repeat(32));
    expect(hit.body!.buffer.byteLength).toBe(32 + body.length);
    expect(hit.body!.buffer).toBe(hit.requestHash.buffer);
  });

  it('holds about the memory it counts (heap and buffers), not the pool blocks its answers came in', () => {
    const gc = runInNewContext('gc', {}, {}) as () => void;
    const c = cache(1 << 30, 600_000);
    const n = 10_000;
    const headers = JSON.stringify({ h: [['content-type', 'application/json; charset=utf-8']] });
    gc();
    const before = process.memoryUsage();
    for (let i = 0; i < n; i++) {
      const body = Buffer.concat([
        Buffer.from(`{"id":"payment-${i}","customerId":"c1","amount":5}`),
      ]);
      // Other short-lived buffers of the request fill the rest of the pool block.
      for (let j = 0; j < 10; j++) Buffer.from('x'.repeat(400));
      const requestHash = createHash('sha256').update(String(i)).digest();
      c.set(
        't|p|POST|/payments',
        `key-${i}`,
        { requestHash, status: 201, headers, body },
        600_000,
        performance.now(),
      );
    }
    gc();
    const after = process.memoryUsage();
    const held = after.heapUsed - before.heapUsed + (after.external - before.external);
    // Before the records were compacted they held 5-8 times what was counted.
    expect(held).toBeLessThan(1.5 * c.size);
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
    // 'gone' lives 200 ms from a time taken right before it is stored: long enough that a loaded
    // machine (three Jest workers beside the databases) still stores it (`set` keeps nothing
    // already past its lifetime), short enough to wait out.
    const goneSince = performance.now();
    c.set('s', 'gone', record(10), 200, goneSince);
    c.delete('s', 'a');
    expect(c.get('s', 'a')).toBeUndefined();
    const before = c.size;
    expect(before).toBeGreaterThan(0);
    while (performance.now() < goneSince + 205) {
      // let the 200 ms of 'gone' pass
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
