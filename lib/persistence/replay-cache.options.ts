import { stripUndefined } from '../internal/strip-undefined';
import type { ReplayCacheStore } from './replay-cache.store';

/*
 * The replay cache's options (`replayCache: {…} | false` of the module): types, defaults and checks. Merged with the other features' options in
 * idempotency-options.resolver.ts (the one place where defaults are applied).
 */

/**
 * The replay cache: completed answers kept in this process, so that a retry of a completed request
 * is answered with no statement. An entry lives at most until its record expires and at most
 * `maxAgeMs`; an admin eviction made through ANOTHER process is seen here after at most
 * `maxAgeMs` (through this process: at once).
 */
export interface ReplayCacheOptions {
  /** Memory budget in bytes (least recently used answers go first). Default 16 MiB; 0 keeps nothing in memory. */
  maxBytes?: number;
  /** Longest life of an entry (in memory and in `store`), in ms. Default 60 s. */
  maxAgeMs?: number;
  /**
   * A shared tier that every instance reads when its memory misses, e.g.
   * `new RedisReplayCacheStore(redis)`: a retry that lands on another instance is answered with
   * one store read and no statement. Written once per first execution, after its commit; an
   * admin eviction deletes the key there too. Default: none.
   */
  store?: ReplayCacheStore;
  /** Longest wait for the store's answer before the ledger answers instead, in ms. Default 100. */
  storeTimeoutMs?: number;
}

/** The replay cache options with every default applied. */
export type ResolvedReplayCacheOptions = Required<Omit<ReplayCacheOptions, 'store'>> & {
  store?: ReplayCacheStore;
};

/** The replay cache's largest budget: its answers live in one buffer (`replay-cache.arena.ts`). */
const MAX_REPLAY_CACHE_BYTES = 2 ** 30;

/** The replay cache defaults. @internal */
export const REPLAY_CACHE_DEFAULTS: ResolvedReplayCacheOptions = {
  maxBytes: 16 * 1024 * 1024,
  maxAgeMs: 60_000,
  storeTimeoutMs: 100,
};

/** Replay cache defaults, or false when turned off. @internal */
export function resolveReplayCacheOptions(
  raw: ReplayCacheOptions | false | undefined,
): ResolvedReplayCacheOptions | false {
  return raw === false ? false : { ...REPLAY_CACHE_DEFAULTS, ...stripUndefined(raw ?? {}) };
}

/** Checks of the replay cache options. @internal */
export function validateReplayCacheOptions(
  o: ResolvedReplayCacheOptions | false,
  fail: (msg: string) => void,
): void {
  if (o === false) return;
  if (!(o.maxBytes >= 0)) fail('replayCache.maxBytes must be >= 0');
  if (o.maxBytes > MAX_REPLAY_CACHE_BYTES) {
    fail(
      `replayCache.maxBytes must be at most 1 GiB (${MAX_REPLAY_CACHE_BYTES}): the answers are kept in one buffer; use replayCache.store to share more`,
    );
  }
  if (!(o.maxAgeMs >= 0)) fail('replayCache.maxAgeMs must be >= 0');
  if (!(o.storeTimeoutMs > 0)) {
    fail('replayCache.storeTimeoutMs must be a positive number of milliseconds');
  }
  const store = o.store as unknown;
  if (
    store !== undefined &&
    !(
      typeof store === 'object' &&
      store !== null &&
      ['get', 'set', 'delete'].every(
        (m) => typeof (store as Record<string, unknown>)[m] === 'function',
      )
    )
  ) {
    fail(
      'replayCache.store must have get(key), set(key, value, ttlMs) and delete(key) methods: pass new RedisReplayCacheStore(redisClient), or your own ReplayCacheStore',
    );
  }
}
