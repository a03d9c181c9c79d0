import { type IdempotencyModuleOptions, keysFromEnv, LEGACY_KEY_ID } from '../../lib';

/**
 * Encryption of stored answers from the environment:
 * - `IDEMPOTENCY_ENCRYPTION_KEYS="k2:<base64>,k1:<base64>"`: the key ring (the first encrypts);
 * - `IDEMPOTENCY_ENCRYPTION_KEY` (64 hex digits or base64): the single key of earlier versions,
 *   a ring of one under the id `default`; set beside KEYS it joins the ring as `default`;
 * - `IDEMPOTENCY_ACCEPT_PLAINTEXT=true`: the migration switch (plaintext answers replayed).
 */
export function encryptionFromEnv(): Pick<IdempotencyModuleOptions, 'encryption'> {
  const keys = keysFromEnv(process.env.IDEMPOTENCY_ENCRYPTION_KEYS) ?? [];
  const legacy = process.env.IDEMPOTENCY_ENCRYPTION_KEY || undefined;
  if (legacy && !keys.some((k) => k.id === LEGACY_KEY_ID)) {
    keys.push({ id: LEGACY_KEY_ID, key: legacy });
  }
  if (keys.length === 0) return {};
  return {
    encryption: { keys, acceptPlaintext: process.env.IDEMPOTENCY_ACCEPT_PLAINTEXT === 'true' },
  };
}
