import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { ReplayCache } from '../../lib/persistence/replay.cache';
import type { BenchReport, BenchSuite } from '../support/bench-suite';

/**
 * The replay cache on its own, in this process: the cost of storing a first execution's answer
 * once the cache is full (every store then frees room), at several sizes.
 * Side by side in one run: this build, another build's cache (`--before=<checkout with dist/>`)
 * and a floor, a Map kept at the same size by a queue of its keys (room freed in constant time,
 * nothing counted).
 */

/** The answer a first execution stores: a small JSON body, its headers, a SHA-256 request hash. */
const BODY = Buffer.from(
  '{"id":"3f1c9a52-7d4e-4b8a-9f0e-2a6c1d8b5e47","customerId":"c-1","amount":100}',
);
const HEADERS = JSON.stringify({ h: [['content-type', 'application/json; charset=utf-8']] });
const SCOPE = '-|-|POST|/payments';

interface CacheLike {
  set(scope: string, key: string, record: unknown, lifetimeMs: number, since: number): void;
  get(scope: string, key: string): unknown;
  readonly size: number;
  /** Entries held (builds since 2026-11-29; earlier ones count one entry's bytes instead). */
  readonly count?: number;
}
type Make = (maxBytes: number) => CacheLike;

const makeCache =
  (Cls: new (o: unknown) => CacheLike): Make =>
  (maxBytes) =>
    new Cls({ replayCache: { maxBytes, maxAgeMs: 3_600_000, storeTimeoutMs: 100 } });

/** The floor: insertion into a Map of the same size, the oldest key dropped through a queue. */
function floor(entries: number): CacheLike {
  const map = new Map<string, unknown>();
  const queue: string[] = new Array(entries);
  let head = 0;
  return {
    set(scope, key, record) {
      const id = `${scope}\u0000${key}`;
      if (map.size >= entries) map.delete(queue[head]);
      map.set(id, record);
      queue[head] = id;
      head = (head + 1) % entries;
    },
    get: (scope, key) => map.get(`${scope}\u0000${key}`),
    get size() {
      return map.size;
    },
  };
}

const record = (i: number) => ({
  requestHash: createHash('sha256').update(String(i)).digest(),
  status: 201,
  headers: HEADERS,
  body: BODY,
});

/** ns per store in a full cache, over `ops` stores; every key stored last is then found. */
function measure(cache: CacheLike, entries: number, ops: number): number {
  let seq = 0;
  const key = () => `key-${(seq++).toString(36).padStart(8, '0')}`;
  // Full three times over, so that every store below frees room, as in a long-running process.
  for (let i = 0; i < 3 * entries; i++) {
    cache.set(SCOPE, key(), record(i), 3_600_000, performance.now());
  }
  const records = Array.from({ length: 1024 }, (_, i) => record(i));
  const keys = Array.from({ length: ops }, key);
  const now = performance.now();
  const t = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) cache.set(SCOPE, keys[i], records[i & 1023], 3_600_000, now);
  const store = Number(process.hrtime.bigint() - t) / ops;
  const last = keys[ops - 1];
  if (!cache.get(SCOPE, last)) {
    throw new Error(`the last answer stored (${last}) is not in the cache`);
  }
  return store;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const suite: BenchSuite = {
  description:
    'Replay cache in process: ns per stored answer once full, at 4k-64k entries (this build, --before=<checkout>, a queue-evicted Map as floor)',
  maxDurationMs: 3 * 60_000,
  async run(ctx) {
    const beforeArg = ctx.args.find((a) => a.startsWith('--before='))?.slice('--before='.length);
    const variants: Array<{ name: string; make: Make | 'floor' }> = [
      { name: 'floor: Map + key queue, nothing counted', make: 'floor' },
      {
        name: 'this build',
        make: makeCache(ReplayCache as unknown as new (o: unknown) => CacheLike),
      },
    ];
    if (beforeArg) {
      const file = join(resolve(beforeArg), 'dist/lib/persistence/replay.cache.js');
      const Before = require(file).ReplayCache;
      variants.push({ name: `before (${beforeArg})`, make: makeCache(Before) });
    }
    const sizes = ctx.quick ? [4_000] : [4_000, 16_000, 64_000];
    const rounds = ctx.quick ? 1 : 5;
    const ops = ctx.quick ? 20_000 : 100_000;
    // The budget that holds `entries` answers, per build: found by filling caches and scaling
    // the budget by the entries they hold (a cache that reports `count`), or, for builds that
    // count each entry's bytes, from one entry's size.
    const budgets = new Map<string, (entries: number) => number>();
    for (const v of variants) {
      if (v.make === 'floor') continue;
      const make = v.make;
      const probe = make(1 << 30);
      probe.set(SCOPE, 'key-00000000', record(0), 3_600_000, performance.now());
      if (probe.count === undefined) {
        const one = probe.size;
        budgets.set(v.name, (entries) => entries * one);
        continue;
      }
      budgets.set(v.name, (entries) => {
        let budget = entries * 400;
        for (let i = 0; i < 4; i++) {
          const c = make(budget);
          for (let k = 0; k < 2 * entries; k++) {
            c.set(
              SCOPE,
              `key-${k.toString(36).padStart(8, '0')}`,
              record(k),
              3_600_000,
              performance.now(),
            );
          }
          budget = Math.ceil((budget * entries) / c.count!);
        }
        return budget;
      });
    }
    const entryBytes = Object.fromEntries(
      [...budgets].map(([name, budgetFor]) => [name, Math.round(budgetFor(4_000) / 4_000)]),
    );
    const rows: Array<Array<string | number>> = [];
    const data: Record<string, unknown> = { entryBytes, rounds, ops };
    const budgetCache = new Map<string, number>();
    const budgetOf = (name: string, entries: number): number => {
      const id = `${name}|${entries}`;
      if (!budgetCache.has(id)) budgetCache.set(id, budgets.get(name)!(entries));
      return budgetCache.get(id)!;
    };
    for (const entries of sizes) {
      const stores = new Map<string, number[]>();
      // Rounds interleave the variants; each measurement has a fresh cache.
      for (let r = 0; r < rounds; r++) {
        for (const v of r % 2 ? [...variants].reverse() : variants) {
          const cache = v.make === 'floor' ? floor(entries) : v.make(budgetOf(v.name, entries));
          stores.set(v.name, [...(stores.get(v.name) ?? []), measure(cache, entries, ops)]);
        }
        ctx.log(`${entries} entries: round ${r + 1}/${rounds}`);
      }
      const floorStore = median(stores.get(variants[0].name)!);
      for (const v of variants) {
        const store = median(stores.get(v.name)!);
        rows.push([entries, v.name, Math.round(store), (store / floorStore).toFixed(2)]);
      }
      data[String(entries)] = Object.fromEntries(variants.map((v) => [v.name, stores.get(v.name)]));
    }
    const report: BenchReport = {
      tables: [
        {
          title: `Replay cache, full, one store per first execution (${ops} stores per measurement, medians of ${rounds} interleaved rounds)`,
          columns: ['entries', 'cache', 'ns/store', '÷ floor'],
          rows,
        },
      ],
      notes: [
        `An entry is a 201 answer of ${BODY.length} bytes with one header and a SHA-256 request hash; each build's budget holds the given number of entries (bytes of budget per entry at 4,000 entries: ${Object.entries(
          entryBytes,
        )
          .map(([n, b]) => `${n} ${b}`)
          .join(', ')}).`,
        'Each store frees room (the cache was filled three times over first). The floor keeps the same number of entries in a Map and drops the oldest through a queue of keys: no bytes counted, no LRU order.',
        '--before=<dir>: a checkout of another build with dist/ built (npm run build), measured in the same rounds.',
      ],
      data,
    };
    return report;
  },
};

export default suite;
