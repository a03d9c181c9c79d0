import { randomBytes } from 'node:crypto';
import { keysFromEnv, KeyRing, resolveKeyRing } from '../../lib/encryption/key-ring';
import { resolveOptions } from '../../lib/idempotency-options.resolver';

const key = () => randomBytes(32);

describe('KeyRing', () => {
  it('takes Buffers, hex and base64; the first key encrypts', () => {
    const a = key();
    const b = key();
    const r = KeyRing.from({
      keys: [
        { id: '2026-12', key: a.toString('base64') },
        { id: '2026-11', key: b.toString('hex') },
      ],
    });
    expect(r.primary.id).toBe('2026-12');
    expect(r.primary.key.equals(a)).toBe(true);
    expect(r.key('2026-11')!.equals(b)).toBe(true);
    expect(r.key('nope')).toBeUndefined();
    expect(r.acceptPlaintext).toBe(false);
  });

  it.each([
    ['an empty ring', { keys: [] }, /is empty/],
    ['no array', { keys: 'k1' as any }, /must be an array/],
    [
      'a short key',
      { keys: [{ id: 'k1', key: randomBytes(16) }] },
      /"k1" is 16 bytes.*openssl rand -base64 32/,
    ],
    ['an empty id', { keys: [{ id: '', key: key() }] }, /not a valid key id/],
    ['an id with ":"', { keys: [{ id: 'a:b', key: key() }] }, /no ':' or ','/],
    ['an id with ","', { keys: [{ id: 'a,b', key: key() }] }, /no ':' or ','/],
    [
      'duplicate ids',
      {
        keys: [
          { id: 'k1', key: key() },
          { id: 'k1', key: key() },
        ],
      },
      /"k1" twice/,
    ],
  ])('refuses %s with the fix', (_, options, message) => {
    expect(() => KeyRing.from(options as any)).toThrow(message);
  });

  it('refuses the same key under two ids', () => {
    const k = key();
    expect(() =>
      KeyRing.from({
        keys: [
          { id: 'a', key: k },
          { id: 'b', key: k },
        ],
      }),
    ).toThrow(/"a" and "b" are the same key/);
  });

  it('maps the deprecated encryptionKey to a ring of one under "default", and refuses both', () => {
    const k = key();
    const r = resolveKeyRing(undefined, k.toString('hex'))!;
    expect(r.ids).toEqual(['default']);
    expect(resolveOptions({ encryptionKey: k }).encryption!.primary).toMatchObject({
      id: 'default',
    });
    expect(() =>
      resolveOptions({ encryptionKey: k, encryption: { keys: [{ id: 'k2', key: key() }] } }),
    ).toThrow(/both encryption.keys and encryptionKey/);
    expect(() => resolveOptions({ encryption: { keys: [{ id: 'k1', key: 'c2hvcnQ=' }] } })).toThrow(
      /32 bytes/,
    );
  });
});

describe('keysFromEnv', () => {
  it('reads "id:base64,id:base64" (base64 may hold ":"-free padding)', () => {
    const a = key();
    const b = key();
    const keys = keysFromEnv(` k2:${a.toString('base64')} , k1:${b.toString('base64')} `)!;
    const r = KeyRing.from({ keys });
    expect(r.ids).toEqual(['k2', 'k1']);
    expect(r.key('k1')!.equals(b)).toBe(true);
    expect(keysFromEnv('')).toBeUndefined();
    expect(keysFromEnv(undefined)).toBeUndefined();
  });

  it('refuses an entry without an id or a key, naming the variable', () => {
    expect(() => keysFromEnv('justakey')).toThrow(/IDEMPOTENCY_ENCRYPTION_KEYS.*"id:base64key"/);
    expect(() => keysFromEnv('k1:')).toThrow(/not "id:base64key"/);
    expect(() => keysFromEnv(':abc', 'MY_KEYS')).toThrow(/MY_KEYS/);
  });
});

describe('IdempotencyModule boot with a malformed ring', () => {
  it('fails at compile with the fix in the message', async () => {
    const { Test } = await import('@nestjs/testing');
    const { IdempotencyModule } = await import('../../lib');
    const compiling = Test.createTestingModule({
      imports: [
        IdempotencyModule.forRoot({
          encryption: {
            keys: [
              { id: 'k1', key: key() },
              { id: 'k1', key: key() },
            ],
          },
        }),
      ],
    }).compile();
    await expect(compiling).rejects.toThrow(/"k1" twice/);
  });
});
