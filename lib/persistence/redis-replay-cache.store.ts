import type { ReplayCacheStore } from './replay-cache.store';

/**
 * A Redis client as this store uses it: ioredis (`call`) or node-redis 4/5 (`sendCommand`).
 * The app creates, configures and closes it; the library only sends GET, SET … PX and DEL.
 */
export type RedisCommandClient =
  | {
      /** ioredis: sends one command with its arguments. */
      call(command: string, ...args: string[]): Promise<unknown>;
    }
  | {
      /** node-redis 4/5: sends one command, the command first. */
      sendCommand(args: string[]): Promise<unknown>;
    };

/** Options of `RedisReplayCacheStore`: the key prefix. */
export interface RedisReplayCacheStoreOptions {
  /** Prefix of every key this store writes. Default `eo:replay:`. */
  prefix?: string;
}

/**
 * The replay cache's shared tier on Redis: `replayCache: { store: new RedisReplayCacheStore(redis) }`.
 * One `GET` per retry that this instance's memory does not answer, one `SET … PX` after a first
 * execution commits, one `DEL` per admin eviction. Redis holds answers as the ledger stores them
 * (headers and bodies sealed under the key ring, `encryption.keys`, stay sealed); trust it as you trust the database.
 */
export class RedisReplayCacheStore implements ReplayCacheStore {
  private readonly send: (args: string[]) => Promise<unknown>;
  private readonly prefix: string;

  constructor(client: RedisCommandClient, options: RedisReplayCacheStoreOptions = {}) {
    const c = client as Partial<Record<'call' | 'sendCommand', unknown>> | null | undefined;
    if (c && typeof c.call === 'function') {
      const call = c.call.bind(client) as (command: string, ...args: string[]) => Promise<unknown>;
      this.send = ([command, ...args]) => call(command, ...args);
    } else if (c && typeof c.sendCommand === 'function') {
      this.send = c.sendCommand.bind(client) as (args: string[]) => Promise<unknown>;
    } else {
      throw new TypeError(
        'RedisReplayCacheStore needs a connected Redis client: an ioredis instance (new Redis(url)) or a node-redis one (createClient({ url }), connected)',
      );
    }
    this.prefix = options.prefix ?? 'eo:replay:';
  }

  async get(key: string): Promise<string | null> {
    const v = await this.send(['GET', this.prefix + key]);
    if (v === null || v === undefined) return null;
    return Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  }

  set(key: string, value: string, ttlMs: number): Promise<unknown> {
    return this.send([
      'SET',
      this.prefix + key,
      value,
      'PX',
      String(Math.max(1, Math.floor(ttlMs))),
    ]);
  }

  delete(key: string): Promise<unknown> {
    return this.send(['DEL', this.prefix + key]);
  }
}
