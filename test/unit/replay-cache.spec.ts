import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { hashOf } from '../../lib/persistence/replay-cache.arena';
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

  it('stays within maxBytes, dropping the oldest entries first', () => {
    const budget = 16 * 1024;
    const c = cache(budget);
    const now = performance.now();
    const kept = (n: number) =>
      Array.from({ length: n }, (_, i) => i).filter((i) => c.get('s', `k${i}`) !== undefined);
    for (let i = 0; i < 100; i++) {
      c.set('s', `k${i}`, record(700), 60_000, now);
      expect(c.size).toBeLessThanOrEqual(budget);
      expect(c.get('s', `k${i}`)?.body?.length).toBe(700); // the newest is always kept
    }
    // What is left is the newest run of entries, as many as fit: 16 KiB holds more than ten of
    // these, never all of them.
    const left = kept(100);
    expect(left.length).toBeGreaterThan(10);
    expect(left.length).toBeLessThan(100);
    expect(left).toEqual(Array.from({ length: left.length }, (_, i) => 100 - left.length + i));
  });

  it('keeps a hit from the older half as new; one from the newer half stays where it is', () => {
    const budget = 16 * 1024;
    const now = performance.now();
    const fill = (c: ReplayCache, from: number, to: number) => {
      for (let i = from; i < to; i++) c.set('s', `e${i}`, record(700), 60_000, now);
    };
    // How many of these entries the budget holds (read oldest first: a read entry is written
    // again in the space it leaves, so reading them drops none).
    const probe = cache(budget);
    fill(probe, 0, 100);
    const held = Array.from({ length: 100 }, (_, i) => i).filter((i) =>
      probe.get('s', `e${i}`),
    ).length;
    expect(held).toBeGreaterThan(6);
    for (const read of [true, false]) {
      const c = cache(budget);
      fill(c, 0, held);
      expect(c.get('s', `e${held - 1}`)).toBeDefined(); // nothing dropped yet
      if (read) {
        expect(c.get('s', 'e0')).toBeDefined(); // the oldest, in the older half: written again
        expect(c.get('s', `e${held - 2}`)).toBeDefined(); // in the newer half: stays where it is
      }
      fill(c, held, 2 * held - 1);
      // Read, e0 outlives everything written before e(held - 1); not read, it went first.
      expect(c.get('s', 'e0') !== undefined).toBe(read);
      expect(c.get('s', 'e1')).toBeUndefined();
      expect(c.get('s', `e${held - 2}`)).toBeUndefined();
      expect(c.get('s', `e${2 * held - 2}`)).toBeDefined();
    }
  });

  it("never answers with another key's record, whatever it drops (random sets, hits, deletes, expiries)", () => {
    // A cache may forget; it must never be wrong. Small budget, answers of many sizes, so that
    // the ring wraps, grows, moves hits and passes dead entries thousands of times.
    let seed = 42;
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    for (const budget of [4 * 1024, 20 * 1024, 200 * 1024]) {
      const c = cache(budget);
      const truth = new Map<string, { hash: number; size: number; until: number }>();
      let version = 0;
      for (let op = 0; op < 20_000; op++) {
        const key = `key-${Math.floor(random() * 200)}`;
        const r = random();
        const now = performance.now();
        if (r < 0.5) {
          version = (version + 1) % 250;
          const size = Math.floor(random() * (budget / 8));
          const lifetime = random() < 0.1 ? 0.5 : 60_000;
          const body = Buffer.alloc(size, version);
          c.set(
            's',
            key,
            {
              requestHash: Buffer.alloc(32, version),
              status: 201,
              headers: `{"v":${version}}`,
              body,
            },
            lifetime,
            now,
          );
          truth.set(key, { hash: version, size, until: now + lifetime });
        } else if (r < 0.9) {
          const asked = performance.now(); // the cache's own clock reads no earlier
          const hit = c.get('s', key);
          if (hit) {
            const t = truth.get(key)!;
            expect(t).toBeDefined();
            expect(hit.requestHash[0]).toBe(t.hash);
            expect(hit.headers).toBe(`{"v":${t.hash}}`);
            expect(hit.body!.length).toBe(t.size);
            if (t.size > 0) expect(hit.body![t.size - 1]).toBe(t.hash);
            expect(asked).toBeLessThan(t.until);
          }
        } else if (r < 0.97) {
          c.delete('s', key);
          truth.delete(key);
        } else c.prune();
        expect(c.size).toBeLessThanOrEqual(budget);
      }
    }
  });

  it("keeps one of two keys whose hashes collide, and answers neither with the other's record", () => {
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const id = `k${i}`;
      const h = hashOf(`1:s${id}`);
      const other = seen.get(h);
      if (other !== undefined) pair = [other, id];
      else seen.set(h, id);
    }
    const [a, b] = pair;
    const c = cache(1 << 20);
    const now = performance.now();
    c.set('s', a, record(10, 1), 60_000, now);
    expect(c.get('s', b)).toBeUndefined();
    c.set('s', b, record(10, 2), 60_000, now);
    expect(c.get('s', a)).toBeUndefined();
    expect(c.get('s', b)!.requestHash[0]).toBe(2);
    c.delete('s', a); // not the entry of b
    expect(c.get('s', b)!.requestHash[0]).toBe(2);
  });

  it('answers a key retried again and again with the same record object', () => {
    const c = cache(1 << 20);
    c.set('s', 'k', record(10), 60_000, performance.now());
    const size = c.size;
    const first = c.get('s', 'k'); // decoded, not kept: most keys are retried once if at all
    expect(first).toBeDefined();
    expect(c.size).toBe(size);
    const second = c.get('s', 'k'); // kept from now on, and counted
    expect(second).not.toBe(first);
    expect(second).toEqual(first);
    expect(c.size).toBeGreaterThan(size);
    expect(c.get('s', 'k')).toBe(second);
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

  it('holds about the memory it counts (heap and buffers), not the pool blocks its answers came in', async () => {
    const gc = runInNewContext('gc', {}, {}) as () => void;
    const c = cache(1 << 30, 600_000);
    const n = 10_000;
    const headers = JSON.stringify({ h: [['content-type', 'application/json; charset=utf-8']] });
    // Buffers freed by the tests before are released a moment after a collection: settled first.
    gc();
    await new Promise((r) => setTimeout(r, 200));
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
    // The ring's earlier, smaller buffers are released a moment after the collection.
    gc();
    await new Promise((r) => setTimeout(r, 200));
    const after = process.memoryUsage();
    // Buffers' memory is in arrayBuffers (`external` also counts the hashes' native contexts,
    // which their finalizers free later).
    const held = after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers);
    // Entries kept as objects held 5-8 times what was counted, before they were compacted. (Only
    // an upper bound: in a loaded Jest worker the heap may shrink meanwhile by what earlier tests
    // left.)
    expect(held).toBeLessThan(1.3 * c.size);
  });

  it("keeps no reference to the caller's buffers: they are collected once the caller drops them", async () => {
    const gc = runInNewContext('gc', {}, {}) as () => void;
    const c = cache(1 << 20);
    const refs: Array<WeakRef<object>> = [];
    (() => {
      for (let i = 0; i < 20; i++) {
        const body = Buffer.allocUnsafeSlow(64).fill(i);
        const requestHash = Buffer.allocUnsafeSlow(32).fill(i);
        refs.push(new WeakRef(body), new WeakRef(requestHash));
        c.set(
          's',
          `k${i}`,
          { requestHash, status: 201, headers: null, body },
          60_000,
          performance.now(),
        );
      }
    })();
    await new Promise((r) => setImmediate(r));
    gc();
    expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0);
    for (let i = 0; i < 20; i++) expect(c.get('s', `k${i}`)!.body![63]).toBe(i);
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
