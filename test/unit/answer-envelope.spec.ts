import { createCipheriv, randomBytes } from 'node:crypto';
import {
  associatedData,
  envelopeHeader,
  openAnswer,
  sealAnswer,
  StoredAnswerError,
} from '../../lib/encryption/answer-envelope';
import { KeyRing, LEGACY_KEY_ID } from '../../lib/encryption/key-ring';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const record = { scope: 'acme|alice|POST|/payments', key: 'pay-1', status: 201 };
const plain = Buffer.from('{"id":"p-1","amount":4242}');

const ring = (...keys: Array<[string, Buffer]>) =>
  KeyRing.from({ keys: keys.map(([id, key]) => ({ id, key })) });

/** What `openAnswer` threw (or fails the test when it opened). */
function fault(fn: () => unknown): StoredAnswerError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StoredAnswerError);
    return e as StoredAnswerError;
  }
  throw new Error('expected the envelope to be refused');
}

/** A format-1 envelope as the single `encryptionKey` wrote it (no key id, no associated data). */
function v1Envelope(key: Buffer, content: Buffer): Buffer {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const sealed = Buffer.concat([c.update(content), c.final()]);
  return Buffer.concat([Buffer.from([1]), iv, c.getAuthTag(), sealed]);
}

describe('stored-answer envelope (format 2)', () => {
  it('seals under the first key, names it, and opens with any ring that holds it', () => {
    const env = sealAnswer(plain, ring(['k2', k2], ['k1', k1]), record);
    expect(envelopeHeader(env)).toEqual({ version: 2, keyId: 'k2' });
    expect(env.includes(plain)).toBe(false);
    const opened = openAnswer(env, ring(['k3', randomBytes(32)], ['k2', k2]), record);
    expect(opened.plain.equals(plain)).toBe(true);
    expect(opened.keyId).toBe('k2');
  });

  it('detects a flipped bit anywhere: key id, IV, tag or ciphertext', () => {
    const r = ring(['k1', k1]);
    const env = sealAnswer(plain, r, record);
    for (let at = 2; at < env.length; at++) {
      const t = Buffer.from(env);
      t[at] ^= 0x01;
      const f = fault(() =>
        openAnswer(t, ring(['k1', k1], ['k0', Buffer.from(k1.map((b) => b ^ 1))]), record),
      );
      expect(['unreadable', 'key-unknown']).toContain(f.fault);
    }
    expect(fault(() => openAnswer(env.subarray(0, env.length - 1), r, record)).fault).toBe(
      'unreadable',
    );
  });

  it('does not open for another record (scope, key or status): the identity is associated data', () => {
    const r = ring(['k1', k1]);
    const env = sealAnswer(plain, r, record);
    for (const other of [
      { ...record, scope: 'acme|mallory|POST|/payments' },
      { ...record, key: 'pay-2' },
      { ...record, status: 200 },
    ]) {
      expect(fault(() => openAnswer(env, r, other)).message).toMatch(/does not authenticate/);
    }
    // Length prefixes: moving a character from the scope to the key changes the data.
    expect(associatedData('k1', { scope: 'ab', key: 'c', status: 1 })).not.toEqual(
      associatedData('k1', { scope: 'a', key: 'bc', status: 1 }),
    );
  });

  it('names the missing key id when the ring no longer holds it', () => {
    const env = sealAnswer(plain, ring(['k1', k1]), record);
    const f = fault(() => openAnswer(env, ring(['k2', k2]), record));
    expect(f.fault).toBe('key-unknown');
    expect(f.keyId).toBe('k1');
    expect(f.message).toContain('"k1"');
  });

  it('does not open under another key that borrowed the id', () => {
    const env = sealAnswer(plain, ring(['k1', k1]), record);
    expect(fault(() => openAnswer(env, ring(['k1', k2]), record)).fault).toBe('unreadable');
  });

  it('refuses an unknown format version and a non-envelope', () => {
    const env = sealAnswer(plain, ring(['k1', k1]), record);
    const v9 = Buffer.from(env);
    v9[0] = 9;
    expect(fault(() => openAnswer(v9, ring(['k1', k1]), record)).message).toMatch(/format 9/);
    expect(fault(() => openAnswer(null, ring(['k1', k1]), record)).fault).toBe('unreadable');
    expect(fault(() => openAnswer(env, undefined, record)).fault).toBe('unreadable');
  });
});

describe('stored-answer envelope (format 1, the single encryptionKey)', () => {
  it('opens with the old key in the ring, whatever its position', () => {
    const env = v1Envelope(k1, plain);
    const opened = openAnswer(env, ring(['k2', k2], [LEGACY_KEY_ID, k1]), record);
    expect(opened.plain.equals(plain)).toBe(true);
    expect(opened.version).toBe(1);
    expect(opened.keyId).toBe(LEGACY_KEY_ID);
  });

  it('names the "default" key when the old key is gone, and detects tampering', () => {
    const env = v1Envelope(k1, plain);
    const f = fault(() => openAnswer(env, ring(['k2', k2]), record));
    expect(f).toMatchObject({ fault: 'key-unknown', keyId: LEGACY_KEY_ID });
    const t = Buffer.from(env);
    t[t.length - 1] ^= 1;
    expect(fault(() => openAnswer(t, ring([LEGACY_KEY_ID, k1]), record)).fault).toBe('unreadable');
  });
});
