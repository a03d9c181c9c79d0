import type { OutboxOptions } from '../../lib';
import { numberFromEnv } from '../config/sample.config';

/**
 * The sample app's outbox options from the environment (each optional; the library's defaults
 * otherwise): OUTBOX_RELAY_ENABLED (`false` for a process that only writes), OUTBOX_POLL_INTERVAL_MS,
 * OUTBOX_BATCH_SIZE, OUTBOX_LEASE_MS, OUTBOX_PUBLISH_TIMEOUT_MS, OUTBOX_MAX_ATTEMPTS,
 * OUTBOX_BACKOFF_BASE_MS, OUTBOX_BACKOFF_MAX_MS, OUTBOX_ORDERED (`true`: per-payment ordering),
 * OUTBOX_SHUTDOWN_TIMEOUT_MS (longest wait for the relay's in-flight batch on shutdown).
 */
export function outboxOptionsFromEnv(): OutboxOptions {
  return {
    relayEnabled: booleanFromEnv('OUTBOX_RELAY_ENABLED'),
    pollIntervalMs: numberFromEnv('OUTBOX_POLL_INTERVAL_MS'),
    batchSize: numberFromEnv('OUTBOX_BATCH_SIZE'),
    leaseMs: numberFromEnv('OUTBOX_LEASE_MS'),
    publishTimeoutMs: numberFromEnv('OUTBOX_PUBLISH_TIMEOUT_MS'),
    maxAttempts: numberFromEnv('OUTBOX_MAX_ATTEMPTS'),
    backoffBaseMs: numberFromEnv('OUTBOX_BACKOFF_BASE_MS'),
    backoffMaxMs: numberFromEnv('OUTBOX_BACKOFF_MAX_MS'),
    ordered: booleanFromEnv('OUTBOX_ORDERED'),
    shutdownTimeoutMs: numberFromEnv('OUTBOX_SHUTDOWN_TIMEOUT_MS'),
  };
}

function booleanFromEnv(name: string): boolean | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new Error(`${name} must be true or false, got "${v}"`);
}
