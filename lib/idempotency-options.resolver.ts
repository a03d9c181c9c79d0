import { IdempotencyOptionsError } from './errors/idempotency-options.error';
import { stripUndefined } from './internal/strip-undefined';
import { resolveKeyRing } from './encryption/key-ring';
import {
  DEFAULT_STORED_HEADERS,
  GATE_DEFAULTS,
  mergeFingerprint,
  statusHeaderName,
  validateGateOptions,
  withoutGateHeaders,
} from './gate/gate.options';
import { INBOX_DEFAULTS, resolveInboxOptions, validateInboxOptions } from './inbox/inbox.options';
import { CLEANUP_DEFAULTS, validateCleanupOptions } from './maintenance/cleanup.options';
import { HEALTH_DEFAULTS, validateHealthOptions } from './maintenance/health.options';
import {
  OUTBOX_DEFAULTS,
  resolveOutboxOptions,
  validateOutboxOptions,
} from './outbox/outbox.options';
import { TABLE_DEFAULTS, validateTableOptions } from './persistence/persistence.options';
import {
  REPLAY_CACHE_DEFAULTS,
  resolveReplayCacheOptions,
  validateReplayCacheOptions,
} from './persistence/replay-cache.options';
import { defaultStrayWrites } from './persistence/stray-writes.options';
import type {
  IdempotencyEndpointOptions,
  IdempotencyModuleOptions,
  ResolvedEndpointOptions,
  ResolvedIdempotencyOptions,
} from './idempotency.options';

/**
 * The module options with every default, and their validation: merged once for forRoot and
 * forRootAsync (`resolveOptions`), then per handler with `@Idempotent()` overrides
 * (`resolveEndpointOptions`). Each feature's defaults and checks live in its own options file
 * (see idempotency.options.ts); this file only assembles them.
 * @internal
 */
export const DEFAULT_OPTIONS: ResolvedIdempotencyOptions = {
  ...GATE_DEFAULTS,
  lockTimeoutMs: 100,
  problemDetailsFilter: true,
  tables: TABLE_DEFAULTS,
  outbox: OUTBOX_DEFAULTS,
  inbox: INBOX_DEFAULTS,
  cleanup: CLEANUP_DEFAULTS,
  replayCache: REPLAY_CACHE_DEFAULTS,
  health: HEALTH_DEFAULTS,
};

/** The one place where defaults are merged (used by forRoot and forRootAsync). */
export function resolveOptions(options: IdempotencyModuleOptions = {}): ResolvedIdempotencyOptions {
  // Read when the module is registered (NODE_ENV may be set after this file was imported).
  const strayWrites = options.strayWrites ?? defaultStrayWrites();
  const ring = resolveKeyRing(options.encryption, options.encryptionKey);
  const merged: ResolvedIdempotencyOptions = {
    ...DEFAULT_OPTIONS,
    ...stripUndefined(options),
    strayWrites,
    encryption: ring,
    encryptionKey: options.encryptionKey !== undefined ? ring?.primary.key : undefined,
    storedHeaders: (options.storedHeaders ?? DEFAULT_STORED_HEADERS).map((h) => h.toLowerCase()),
    statusHeader: statusHeaderName(options.statusHeader),
    tables: { ...DEFAULT_OPTIONS.tables, ...stripUndefined(options.tables ?? {}) },
    inProgress: { ...DEFAULT_OPTIONS.inProgress, ...stripUndefined(options.inProgress ?? {}) },
    fingerprint: mergeFingerprint(DEFAULT_OPTIONS.fingerprint, options.fingerprint),
    outbox: resolveOutboxOptions(options.outbox),
    inbox: resolveInboxOptions(options.inbox, strayWrites),
    cleanup: { ...DEFAULT_OPTIONS.cleanup, ...stripUndefined(options.cleanup ?? {}) },
    health: { ...DEFAULT_OPTIONS.health, ...stripUndefined(options.health ?? {}) },
    replayCache: resolveReplayCacheOptions(options.replayCache),
  };
  merged.storedHeaders = withoutGateHeaders(merged);
  validateOptions(merged);
  return merged;
}

/** Applies `@Idempotent()` overrides on top of the module options. */
export function resolveEndpointOptions(
  base: ResolvedIdempotencyOptions,
  overrides: IdempotencyEndpointOptions | undefined,
): ResolvedEndpointOptions {
  if (!overrides) return base;
  const o = stripUndefined(overrides);
  const merged: ResolvedEndpointOptions = {
    ...base,
    ...o,
    storedHeaders: o.storedHeaders
      ? o.storedHeaders.map((h) => h.toLowerCase())
      : base.storedHeaders,
    inProgress: { ...base.inProgress, ...stripUndefined(o.inProgress ?? {}) },
    fingerprint: mergeFingerprint(base.fingerprint, o.fingerprint),
    statusHeader: 'statusHeader' in o ? statusHeaderName(o.statusHeader) : base.statusHeader,
  };
  merged.storedHeaders = withoutGateHeaders(merged);
  validateOptions(merged);
  return merged;
}

/** Every feature's checks, in one pass; the first failure throws, naming the option. */
function validateOptions(o: ResolvedIdempotencyOptions): void {
  const fail = (msg: string) => {
    throw new IdempotencyOptionsError(`IdempotencyModule: ${msg}`);
  };
  validateGateOptions(o, fail);
  if (!(o.lockTimeoutMs >= 0)) fail('lockTimeoutMs must be >= 0');
  validateTableOptions(o.tables, o.schema, fail);
  validateCleanupOptions(o.cleanup, fail);
  validateOutboxOptions(o.outbox, fail);
  validateInboxOptions(o.inbox, fail);
  validateReplayCacheOptions(o.replayCache, fail);
  validateHealthOptions(o.health, fail);
}
