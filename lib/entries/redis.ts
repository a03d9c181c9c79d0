// `nestjs-exactly-once/redis`: the Redis tier of the replay cache (`replayCache.store`).
export {
  RedisReplayCacheStore,
  type RedisCommandClient,
  type RedisReplayCacheStoreOptions,
} from '../persistence/redis-replay-cache.store';
