import { RedisReplayCacheStore } from '../../lib';
import {
  type CachedRecord,
  decodeCachedRecord,
  encodeCachedRecord,
} from '../../lib/persistence/replay-cache.store';

const record = (over: Partial<CachedRecord> = {}): CachedRecord => ({
  requestHash: Buffer.alloc(32, 9),
  status: 201,
  headers: '{"content-type":["application/json; charset=utf-8"],"x":["é\\t"]}',
  body: Buffer.from([0, 1, 2, 255, 9, 10]),
  ...over,
});

describe("the shared replay tier's encoding", () => {
  it.each([
    ['a full answer', record()],
    ['no headers and no body', record({ headers: null, body: null })],
    ['an empty body', record({ body: Buffer.alloc(0) })],
  ])('round-trips %s byte for byte', (_label, r) => {
    const back = decodeCachedRecord(encodeCachedRecord(r))!;
    expect(back.status).toBe(r.status);
    expect(back.requestHash.equals(r.requestHash)).toBe(true);
    expect(back.headers).toBe(r.headers);
    if (r.body === null) expect(back.body).toBeNull();
    else expect(back.body!.equals(r.body)).toBe(true);
  });

  it.each([
    ['nothing', null],
    ['a number', 42],
    ['a value of another writer', 'hello'],
    ['another format version', encodeCachedRecord(record()).replace(/^eo1/, 'eo2')],
    ['a cut-off value', encodeCachedRecord(record()).split('\t').slice(0, 4).join('\t')],
    ['a status out of range', encodeCachedRecord(record()).replace('\t201\t', '\t99\t')],
    ['a short fingerprint', encodeCachedRecord(record({ requestHash: Buffer.alloc(16) }))],
    [
      'a body field without its marker',
      encodeCachedRecord(record()).replace(/\t\+([^\t]*)$/, '\t$1'),
    ],
  ])('reads %s as a miss', (_label, value) => {
    expect(decodeCachedRecord(value)).toBeUndefined();
  });
});

describe('RedisReplayCacheStore', () => {
  it('refuses something that is not a Redis client, naming both supported clients', () => {
    expect(() => new RedisReplayCacheStore({} as any)).toThrow(/ioredis.*node-redis/);
    expect(() => new RedisReplayCacheStore(undefined as any)).toThrow(/ioredis.*node-redis/);
  });
});
