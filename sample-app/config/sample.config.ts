import type { IdempotencyMode } from '../../lib';

/** IDEMPOTENCY_MODE picks the mode of POST /payments (read when AppModule's IdempotencyModule options are built). */
export function idempotencyModeFromEnv(): IdempotencyMode {
  const mode = process.env.IDEMPOTENCY_MODE ?? 'transactional';
  if (mode !== 'transactional' && mode !== 'leased') {
    throw new Error(`IDEMPOTENCY_MODE must be "transactional" or "leased", got "${mode}"`);
  }
  return mode;
}

export const numberFromEnv = (name: string): number | undefined => {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) {
    throw new Error(`${name} must be a non-negative number, got "${v}"`);
  }
  return n;
};
