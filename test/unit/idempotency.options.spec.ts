import { randomBytes } from 'node:crypto';
import { defaultStoreStatus, type IdempotencyModuleOptions } from '../../lib/idempotency.options';
import {
  DEFAULT_OPTIONS,
  resolveEndpointOptions,
  resolveOptions,
} from '../../lib/idempotency-options.resolver';

describe('resolveOptions (module options, defaults merged once)', () => {
  it('gives the documented defaults for no options', () => {
    const o = resolveOptions();
    expect(o).toMatchObject({
      mode: 'transactional',
      ttl: 24 * 60 * 60 * 1000,
      leaseMs: 10_000,
      required: true,
      headerName: 'Idempotency-Key',
      maxKeyLength: 255,
      maxResponseBytes: 1024 * 1024,
      oversizedResponse: 'reject',
      mismatchStatus: 422,
      retryAfterSeconds: 1,
      lockTimeoutMs: 100,
      inProgress: { policy: 'reject', maxWaitMs: 5000, pollIntervalMs: 100 },
      fingerprint: { headers: [], excludeBodyPaths: [] },
      tables: { idempotency: 'idempotency_records' },
      inbox: { acknowledge: 'auto', maxAttempts: 5, onMaxAttempts: 'ack' },
    });
    expect(o.storedHeaders).toEqual(expect.arrayContaining(['content-type', 'location', 'etag']));
    expect(o.encryptionKey).toBeUndefined();
  });

  it('lets undefined values fall back to the defaults (e.g. an unset env var)', () => {
    const o = resolveOptions({
      ttl: undefined,
      leaseMs: undefined,
      mode: undefined,
      inProgress: { policy: 'wait', maxWaitMs: undefined },
    });
    expect(o.ttl).toBe(DEFAULT_OPTIONS.ttl);
    expect(o.leaseMs).toBe(DEFAULT_OPTIONS.leaseMs);
    expect(o.mode).toBe('transactional');
    expect(o.inProgress).toEqual({ policy: 'wait', maxWaitMs: 5000, pollIntervalMs: 100 });
  });

  it('merges nested sections member by member', () => {
    const o = resolveOptions({
      tables: { idempotency: 'my_ledger' },
      fingerprint: { headers: ['X-Account'] },
    });
    expect(o.tables.idempotency).toBe('my_ledger');
    expect(o.tables.outbox).toBe(DEFAULT_OPTIONS.tables.outbox);
    expect(o.fingerprint).toEqual({
      headers: ['X-Account'],
      excludeBodyPaths: [],
      includeBodyPaths: [],
    });
  });

  it('lower-cases the stored-header allow-list', () => {
    expect(resolveOptions({ storedHeaders: ['Content-Type', 'X-Trace'] }).storedHeaders).toEqual([
      'content-type',
      'x-trace',
    ]);
  });

  it('accepts the encryption key as a Buffer, 64 hex digits or base64', () => {
    const key = randomBytes(32);
    expect(resolveOptions({ encryptionKey: key }).encryptionKey!.equals(key)).toBe(true);
    expect(resolveOptions({ encryptionKey: key.toString('hex') }).encryptionKey!.equals(key)).toBe(
      true,
    );
    expect(
      resolveOptions({ encryptionKey: key.toString('base64') }).encryptionKey!.equals(key),
    ).toBe(true);
  });

  it('does not change the shared defaults', () => {
    const before = JSON.stringify(DEFAULT_OPTIONS);
    const o = resolveOptions({ inProgress: { policy: 'wait' }, tables: { idempotency: 'x' } });
    o.inProgress.maxWaitMs = 1;
    o.tables.outbox = 'changed';
    o.storedHeaders.push('x-extra');
    expect(JSON.stringify(DEFAULT_OPTIONS)).toBe(before);
    expect(resolveOptions().inProgress.maxWaitMs).toBe(5000);
  });

  it.each<[string, IdempotencyModuleOptions, RegExp]>([
    ['an unknown mode', { mode: 'eventual' as any }, /mode/],
    ['a zero ttl', { ttl: 0 }, /ttl/],
    ['a negative lease', { leaseMs: -1 }, /leaseMs/],
    ['maxKeyLength 0', { maxKeyLength: 0 }, /maxKeyLength/],
    ['maxKeyLength over 255', { maxKeyLength: 256 }, /maxKeyLength/],
    ['a zero response limit', { maxResponseBytes: 0 }, /maxResponseBytes/],
    ['a mismatch status other than 409/422', { mismatchStatus: 400 as any }, /mismatchStatus/],
    ['a header name with a space', { headerName: 'Idempotency Key' }, /headerName/],
    ['a negative lock timeout', { lockTimeoutMs: -5 }, /lockTimeoutMs/],
    [
      'a table name that is not an identifier',
      { tables: { idempotency: 'x; DROP TABLE y' } },
      /table name/,
    ],
    ['a schema that is not an identifier', { schema: 'dbo.x' }, /schema/],
    ['an encryption key of the wrong length', { encryptionKey: randomBytes(16) }, /32 bytes/],
    [
      'an unknown in-progress policy',
      { inProgress: { policy: 'queue' as any } },
      /inProgress\.policy/,
    ],
    ['a negative wait bound', { inProgress: { policy: 'wait', maxWaitMs: -1 } }, /maxWaitMs/],
    [
      'a zero poll interval',
      { inProgress: { policy: 'wait', pollIntervalMs: 0 } },
      /pollIntervalMs/,
    ],
    [
      'an unknown oversized-response behaviour',
      { oversizedResponse: 'truncate' as any },
      /oversizedResponse/,
    ],
    ['a storeStatus that is not a function', { storeStatus: 'all' as any }, /storeStatus/],
    ['a fractional Retry-After hint', { retryAfterSeconds: 1.5 }, /retryAfterSeconds/],
    [
      'an unknown inbox.acknowledge',
      { inbox: { acknowledge: 'always' as any } },
      /inbox\.acknowledge/,
    ],
    [
      'a replay cache store that is a Redis client, not a store',
      { replayCache: { store: { get: async () => null, call: async () => null } as any } },
      /replayCache\.store must have get\(key\), set\(key, value, ttlMs\) and delete\(key\).*RedisReplayCacheStore/,
    ],
    ['a zero store time-out', { replayCache: { storeTimeoutMs: 0 } }, /storeTimeoutMs/],
    [
      'a replay cache over 1 GiB',
      { replayCache: { maxBytes: 2 ** 30 + 1 } },
      /replayCache\.maxBytes must be at most 1 GiB/,
    ],
  ])('rejects %s with a message naming the option', (_label, options, message) => {
    expect(() => resolveOptions(options)).toThrow(message);
    expect(() => resolveOptions(options)).toThrow(/^IdempotencyModule: /);
  });
});

describe('resolveEndpointOptions (@Idempotent() overrides)', () => {
  const base = resolveOptions({
    ttl: 1000,
    storedHeaders: ['content-type'],
    fingerprint: { headers: ['x-a'] },
  });

  it('returns the module options when there is nothing to override', () => {
    expect(resolveEndpointOptions(base, undefined)).toBe(base);
  });

  it('overrides what the endpoint sets and keeps the module values for the rest', () => {
    const e = resolveEndpointOptions(base, {
      mode: 'leased',
      required: false,
      maxResponseBytes: 10,
      ttl: undefined,
    });
    expect(e).toMatchObject({ mode: 'leased', required: false, maxResponseBytes: 10, ttl: 1000 });
    expect(e.lockTimeoutMs).toBe(base.lockTimeoutMs);
    expect(base.mode).toBe('transactional');
  });

  it('merges nested endpoint settings with the module ones', () => {
    const e = resolveEndpointOptions(base, {
      inProgress: { policy: 'wait', maxWaitMs: 300 },
      fingerprint: { excludeBodyPaths: ['meta.ts'] },
      storedHeaders: ['ETag'],
    });
    expect(e.inProgress).toEqual({ policy: 'wait', maxWaitMs: 300, pollIntervalMs: 100 });
    expect(e.fingerprint).toEqual({
      headers: ['x-a'],
      excludeBodyPaths: ['meta.ts'],
      includeBodyPaths: [],
    });
    expect(e.storedHeaders).toEqual(['etag']);
  });

  it('validates the merged result', () => {
    expect(() => resolveEndpointOptions(base, { maxKeyLength: 300 })).toThrow(/maxKeyLength/);
    expect(() =>
      resolveEndpointOptions(base, { inProgress: { policy: 'wait', pollIntervalMs: -1 } }),
    ).toThrow(/pollIntervalMs/);
  });
});

describe('defaultStoreStatus', () => {
  it('stores 2xx, 3xx and 4xx except the transient 408, 409, 425 and 429; never 5xx', () => {
    for (const s of [200, 201, 204, 301, 400, 402, 404, 422]) {
      expect(defaultStoreStatus(s)).toBe(true);
    }
    for (const s of [408, 409, 425, 429, 500, 502, 503]) expect(defaultStoreStatus(s)).toBe(false);
  });
});
