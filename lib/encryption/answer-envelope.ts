import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ExactlyOnceError } from '../errors/exactly-once.error';
import type { KeyRing } from './key-ring';
import { LEGACY_KEY_ID } from './key-ring';
import {
  ENVELOPE_KEY_UNKNOWN,
  ENVELOPE_MALFORMED,
  ENVELOPE_NO_RING,
  ENVELOPE_TAMPERED,
  ENVELOPE_VERSION,
  PLAINTEXT_REFUSED,
} from './encryption.messages';

/**
 * The envelope of a sealed stored answer (the ledger's `response_body` column):
 *
 * - format 2: `0x02 | id length (1 byte) | key id (UTF-8) | IV (12) | GCM tag (16) | ciphertext`,
 *   AES-256-GCM under the ring's key of that id, with the record's identity as associated data
 *   (see {@link associatedData}): a ciphertext copied to another record does not open;
 * - format 1 (written by the single `encryptionKey` before key rings): `0x01 | IV | tag |
 *   ciphertext`, no key id and no associated data. Read with the ring's keys (it was sealed
 *   under the key now known as `default`), rewritten in format 2 by `reencryptStoredAnswers`.
 */
export const ENVELOPE_V1 = 1;
export const ENVELOPE_V2 = 2;

/** Whose answer a ciphertext is: the record's scope and key, and the stored status. */
export interface AnswerIdentity {
  scope: string;
  key: string;
  status: number;
}

/** Why a stored answer cannot be replayed. */
export type StoredAnswerFault = 'key-unknown' | 'plaintext' | 'unreadable';

/** A stored answer that cannot be opened; `keyId` names the missing key (`key-unknown`). */
export class StoredAnswerError extends ExactlyOnceError {
  readonly code = 'STORED_ANSWER_UNREADABLE';

  constructor(
    readonly fault: StoredAnswerFault,
    message: string,
    readonly keyId?: string,
  ) {
    super(message);
  }
}

const AAD_LABEL = Buffer.from('nestjs-exactly-once:stored-answer:v2\0');

/** The associated data of a format-2 envelope: label, key id, scope, key and status, each length-prefixed. */
export function associatedData(keyId: string, id: AnswerIdentity): Buffer {
  const parts = [keyId, id.scope, id.key].map((s) => {
    const b = Buffer.from(s, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  });
  const status = Buffer.alloc(4);
  status.writeUInt32BE(id.status >>> 0);
  return Buffer.concat([AAD_LABEL, ...parts, status]);
}

/** Seals `plain` under the ring's primary key, bound to the record `id` (format 2). */
export function sealAnswer(plain: Buffer, ring: KeyRing, id: AnswerIdentity): Buffer {
  const { id: keyId, key } = ring.primary;
  const kid = Buffer.from(keyId, 'utf8');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(associatedData(keyId, id));
  const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([
    Buffer.from([ENVELOPE_V2, kid.length]),
    kid,
    iv,
    cipher.getAuthTag(),
    sealed,
  ]);
}

/** The format and key id of an envelope, without opening it (undefined: not an envelope this library reads). */
export function envelopeHeader(
  envelope: Buffer | null,
): { version: number; keyId?: string } | undefined {
  if (!envelope || envelope.length < 1) return undefined;
  const version = envelope[0];
  if (version === ENVELOPE_V1) return { version };
  if (version !== ENVELOPE_V2 || envelope.length < 2) return { version };
  const n = envelope[1];
  if (envelope.length < 2 + n) return { version };
  return { version, keyId: envelope.subarray(2, 2 + n).toString('utf8') };
}

/**
 * Opens an envelope with the ring, checking it belongs to record `id`. Throws a
 * StoredAnswerError: `key-unknown` (naming the key id) when its key is not in the ring,
 * `unreadable` when it is malformed, altered or moved from another record.
 */
export function openAnswer(
  envelope: Buffer | null,
  ring: KeyRing | undefined,
  id: AnswerIdentity,
): { plain: Buffer; keyId: string; version: number } {
  if (!ring) throw new StoredAnswerError('unreadable', ENVELOPE_NO_RING);
  const head = envelopeHeader(envelope);
  if (!envelope || !head) throw new StoredAnswerError('unreadable', ENVELOPE_MALFORMED);
  if (head.version === ENVELOPE_V1) return openV1(envelope, ring);
  if (head.version !== ENVELOPE_V2) {
    throw new StoredAnswerError('unreadable', ENVELOPE_VERSION(head.version));
  }
  const keyId = head.keyId;
  const start = 2 + (envelope[1] ?? 0);
  if (keyId === undefined || keyId === '' || envelope.length < start + 28) {
    throw new StoredAnswerError('unreadable', ENVELOPE_MALFORMED);
  }
  const key = ring.key(keyId);
  if (!key) throw new StoredAnswerError('key-unknown', ENVELOPE_KEY_UNKNOWN(keyId), keyId);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, envelope.subarray(start, start + 12));
    decipher.setAAD(associatedData(keyId, id));
    decipher.setAuthTag(envelope.subarray(start + 12, start + 28));
    const plain = Buffer.concat([decipher.update(envelope.subarray(start + 28)), decipher.final()]);
    return { plain, keyId, version: ENVELOPE_V2 };
  } catch {
    throw new StoredAnswerError('unreadable', ENVELOPE_TAMPERED(keyId));
  }
}

/** Format 1: no key id in it; it was sealed under the `default` key, tried first, then the others. */
function openV1(
  envelope: Buffer,
  ring: KeyRing,
): { plain: Buffer; keyId: string; version: number } {
  if (envelope.length < 29) throw new StoredAnswerError('unreadable', ENVELOPE_MALFORMED);
  const ordered = [...ring.keys].sort(
    (a, b) => Number(b.id === LEGACY_KEY_ID) - Number(a.id === LEGACY_KEY_ID),
  );
  for (const { id, key } of ordered) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, envelope.subarray(1, 13));
      decipher.setAuthTag(envelope.subarray(13, 29));
      const plain = Buffer.concat([decipher.update(envelope.subarray(29)), decipher.final()]);
      return { plain, keyId: id, version: ENVELOPE_V1 };
    } catch {
      // not this key
    }
  }
  if (!ring.key(LEGACY_KEY_ID)) {
    throw new StoredAnswerError('key-unknown', ENVELOPE_KEY_UNKNOWN(LEGACY_KEY_ID), LEGACY_KEY_ID);
  }
  throw new StoredAnswerError('unreadable', ENVELOPE_TAMPERED(LEGACY_KEY_ID));
}

/** The refusal of a plaintext stored answer while keys are set (without the migration switch). */
export const plaintextRefused = () => new StoredAnswerError('plaintext', PLAINTEXT_REFUSED);
