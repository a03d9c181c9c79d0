import {
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationShutdown,
  Optional,
} from '@nestjs/common';
import { RedisReplayCacheStore, type ReplayCacheStore } from '../../lib';

/** The node-redis client of the replay cache's shared tier, when REPLAY_CACHE_REDIS_URL is set. */
const REPLAY_CACHE_REDIS = Symbol('sample-app:replay-cache-redis');
type RedisClient = ReturnType<typeof import('redis').createClient>;
const logger = new Logger('ReplayCacheRedis');

/** The shared tier's store, or undefined (REPLAY_CACHE_REDIS_URL unset: each instance's memory only). */
export const REPLAY_CACHE_STORE = Symbol('sample-app:replay-cache-store');

/** Closes the Redis client when the app shuts down. */
@Injectable()
class ReplayCacheRedisCloser implements OnApplicationShutdown {
  constructor(@Optional() @Inject(REPLAY_CACHE_REDIS) private readonly client?: RedisClient) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.client?.isOpen) await this.client.close();
  }
}

/**
 * The replay cache's opt-in shared tier for the sample app: with REPLAY_CACHE_REDIS_URL
 * (`redis://host:6379`), every instance answers a retry that its own memory does not know with
 * one Redis GET (a retry sent to another instance of a load-balanced deployment), and each first
 * execution writes its answer there after its commit. Unset, nothing connects to Redis.
 * The key prefix is REPLAY_CACHE_REDIS_PREFIX (default `eo:replay:`).
 */
@Module({
  providers: [
    {
      provide: REPLAY_CACHE_REDIS,
      useFactory: async (): Promise<RedisClient | undefined> => {
        const url = process.env.REPLAY_CACHE_REDIS_URL;
        if (!url) return undefined;
        // Loaded only when asked for: an app without the shared tier never loads node-redis.
        const { createClient } = await import('redis');
        let connected = false;
        const client = createClient({
          url,
          // At boot, a Redis that cannot be reached fails the start (below); once connected, a
          // lost connection is retried for as long as it takes (the ledger answers meanwhile:
          // the library waits at most replayCache.storeTimeoutMs for Redis).
          socket: {
            connectTimeout: 5000,
            reconnectStrategy: (retries: number, cause: Error) =>
              !connected && retries >= 2 ? cause : Math.min(100 * (retries + 1), 2000),
          },
        });
        // node-redis reports a lost connection as an 'error' event: logged, never a crash.
        client.on('error', (e: Error) => logger.warn(`replay cache Redis: ${e.message}`));
        try {
          await client.connect();
          connected = true;
        } catch (e) {
          throw new Error(
            `REPLAY_CACHE_REDIS_URL: cannot connect to ${url}: ${(e as Error).message}. Start Redis there, or unset REPLAY_CACHE_REDIS_URL to keep the replay cache in each instance's memory only.`,
          );
        }
        return client;
      },
    },
    {
      provide: REPLAY_CACHE_STORE,
      useFactory: (client?: RedisClient): ReplayCacheStore | undefined =>
        client
          ? new RedisReplayCacheStore(client, {
              prefix: process.env.REPLAY_CACHE_REDIS_PREFIX || undefined,
            })
          : undefined,
      inject: [REPLAY_CACHE_REDIS],
    },
    ReplayCacheRedisCloser,
  ],
  exports: [REPLAY_CACHE_STORE],
})
export class ReplayCacheRedisModule {}
