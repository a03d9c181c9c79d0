/** Texts of the key ring's boot errors and of the stored-answer envelope (at rest encryption). */

const RING = 'IdempotencyModule: encryption.keys';

export const RING_EMPTY = `${RING} is empty. Give at least one { id, key } (the first encrypts), or leave encryption out to store answers unencrypted.`;

export const RING_NOT_ARRAY = `${RING} must be an array of { id, key } (the first encrypts, all decrypt).`;

export const RING_BAD_ID = (index: number, id: unknown) =>
  `${RING}[${index}].id ${JSON.stringify(id)} is not a valid key id: use 1 to 64 characters of letters, digits, '.', '_' or '-' (no ':' or ','), e.g. "2026-12".`;

export const RING_DUPLICATE_ID = (id: string) =>
  `${RING} has the id "${id}" twice. Give each key its own id (a new key gets a new id, e.g. the month it was made).`;

export const RING_DUPLICATE_KEY = (first: string, second: string) =>
  `${RING}: "${first}" and "${second}" are the same key. Remove one of them (keep the id the stored answers were sealed under).`;

export const RING_BAD_KEY = (id: string, bytes: number) =>
  `${RING}: the key "${id}" is ${bytes} bytes; AES-256-GCM needs exactly 32 bytes, given as a Buffer, 64 hex digits or base64 (make one with: openssl rand -base64 32).`;

export const RING_AND_LEGACY_KEY =
  'IdempotencyModule: both encryption.keys and encryptionKey are set. Use encryption.keys only, with the old key in it under the id "default" (answers sealed with encryptionKey carry that id): encryption: { keys: [{ id: "<new id>", key: <new key> }, { id: "default", key: <old key> }] }.';

export const LEGACY_KEY_LENGTH =
  'IdempotencyModule: encryptionKey must be 32 bytes (a Buffer, 64 hex digits or base64).';

export const RING_ENV_ENTRY = (name: string, entry: string) =>
  `${name}: "${entry.length > 20 ? entry.slice(0, 20) + '…' : entry}" is not "id:base64key". Write the ring as "k2:<base64 of 32 bytes>,k1:<base64 of 32 bytes>" (the first encrypts).`;

export const ENVELOPE_MALFORMED = 'The stored answer is sealed but its envelope is malformed.';

export const ENVELOPE_VERSION = (v: number) =>
  `The stored answer is sealed in envelope format ${v}, which this version of the library does not read.`;

export const ENVELOPE_TAMPERED = (keyId: string) =>
  `The stored answer sealed under key "${keyId}" does not authenticate: it was altered, or moved from another record.`;

export const ENVELOPE_KEY_UNKNOWN = (keyId: string) =>
  `The stored answer is sealed under the key "${keyId}", which is not in the key ring.`;

export const ENVELOPE_NO_RING =
  'A stored answer is encrypted but no encryption key is configured (encryption.keys).';

export const PLAINTEXT_REFUSED =
  'The stored answer is not encrypted while encryption.keys is set (refused; encryption.acceptPlaintext: true replays such answers during a migration window).';
