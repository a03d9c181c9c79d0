import {
  LEGACY_KEY_LENGTH,
  RING_AND_LEGACY_KEY,
  RING_BAD_ID,
  RING_BAD_KEY,
  RING_DUPLICATE_ID,
  RING_DUPLICATE_KEY,
  RING_EMPTY,
  RING_ENV_ENTRY,
  RING_NOT_ARRAY,
} from './encryption.messages';

/** One key of the ring: its id (stored in every envelope it seals) and 32 bytes. */
export interface EncryptionKeyOption {
  /** 1 to 64 characters: letters, digits, `.`, `_`, `-` (e.g. `2026-12`). */
  id: string;
  /** 32 bytes: a Buffer, 64 hex digits or base64. */
  key: Buffer | string;
}

/** At rest encryption of stored answers (status line aside: headers and body). */
export interface EncryptionOptions {
  /** The key ring: the first key seals new answers, every key opens the answers sealed under it. */
  keys: EncryptionKeyOption[];
  /**
   * Migration switch: replay stored answers that are not encrypted (written before keys were
   * set) instead of refusing them with a 500 problem. Default false. Turn it on for the window
   * in which `reencryptStoredAnswers` seals the old rows, then off.
   */
  acceptPlaintext?: boolean;
}

/** The id under which the single `encryptionKey` option (deprecated) sits in the ring. */
export const LEGACY_KEY_ID = 'default';

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The resolved key ring: the primary (first) key seals, every key opens what it sealed. Built by
 * `KeyRing.from(...)`, which refuses a malformed ring (length, ids) with the fix in the message.
 */
export class KeyRing {
  private readonly byId: ReadonlyMap<string, Buffer>;

  private constructor(
    readonly keys: ReadonlyArray<{ readonly id: string; readonly key: Buffer }>,
    readonly acceptPlaintext: boolean,
  ) {
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** The key that seals new answers. */
  get primary(): { readonly id: string; readonly key: Buffer } {
    return this.keys[0];
  }

  /** The key with this id, or undefined when it is not in the ring. */
  key(id: string): Buffer | undefined {
    return this.byId.get(id);
  }

  /** The ids of the ring's keys, in order: the first seals, every one opens. */
  get ids(): string[] {
    return this.keys.map((k) => k.id);
  }

  /** Validates and builds a ring (throws with the fix on a malformed one). */
  static from(options: EncryptionOptions): KeyRing {
    if (!options || !Array.isArray(options.keys)) throw new Error(RING_NOT_ARRAY);
    if (options.keys.length === 0) throw new Error(RING_EMPTY);
    const seen = new Map<string, string>();
    const keys = options.keys.map((k, i) => {
      if (typeof k?.id !== 'string' || !KEY_ID.test(k.id)) throw new Error(RING_BAD_ID(i, k?.id));
      const key = keyBytes(k.key);
      if (key.length !== 32) throw new Error(RING_BAD_KEY(k.id, key.length));
      if (seen.has(k.id)) throw new Error(RING_DUPLICATE_ID(k.id));
      const hex = key.toString('hex');
      for (const [id, other] of seen) {
        if (other === hex) throw new Error(RING_DUPLICATE_KEY(id, k.id));
      }
      seen.set(k.id, hex);
      return { id: k.id, key: Buffer.from(key) };
    });
    return new KeyRing(keys, options.acceptPlaintext === true);
  }
}

/** A key given as a Buffer, 64 hex digits, or base64. */
function keyBytes(key: Buffer | string | undefined): Buffer {
  if (Buffer.isBuffer(key)) return key;
  if (typeof key !== 'string') return Buffer.alloc(0);
  const k = key.trim();
  return /^[0-9a-fA-F]{64}$/.test(k) ? Buffer.from(k, 'hex') : Buffer.from(k, 'base64');
}

/**
 * The ring of the module options: `encryption.keys`, or the deprecated single `encryptionKey`
 * as a ring of one under the id {@link LEGACY_KEY_ID}; undefined when neither is set.
 * @internal
 */
export function resolveKeyRing(
  encryption: EncryptionOptions | undefined,
  encryptionKey: Buffer | string | undefined,
): KeyRing | undefined {
  if (encryption !== undefined && encryptionKey !== undefined) throw new Error(RING_AND_LEGACY_KEY);
  if (encryption !== undefined) return KeyRing.from(encryption);
  if (encryptionKey === undefined) return undefined;
  const key = keyBytes(encryptionKey);
  if (key.length !== 32) throw new Error(LEGACY_KEY_LENGTH);
  return KeyRing.from({ keys: [{ id: LEGACY_KEY_ID, key }] });
}

/**
 * Reads a ring written as `id:base64key,id:base64key` (an environment variable such as
 * `IDEMPOTENCY_ENCRYPTION_KEYS`); the first encrypts. Empty or unset: undefined. The keys are
 * checked by `KeyRing.from` (length, ids).
 */
export function keysFromEnv(
  text: string | undefined,
  name = 'IDEMPOTENCY_ENCRYPTION_KEYS',
): EncryptionKeyOption[] | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  return text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
    .map((entry) => {
      const at = entry.indexOf(':');
      if (at <= 0 || at === entry.length - 1) throw new Error(RING_ENV_ENTRY(name, entry));
      return { id: entry.slice(0, at), key: entry.slice(at + 1) };
    });
}
