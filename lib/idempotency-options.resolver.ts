import { validateOutboxRouting } from './outbox/outbox-routing.options';
import { inboxBackoffProblem } from './inbox/inbox-backoff';
import { stripUndefined } from './internal/strip-undefined';
import { resolveKeyRing } from './encryption/key-ring';
import {
  DEFAULT_STORED_HEADERS,
  defaultStoreStatus,
  defaultStrayWrites,
  type FingerprintOptions,
  type IdempotencyEndpointOptions,
  type IdempotencyModuleOptions,
  type OutboxOptions,
  type ReplayCacheOptions,
  type ResolvedEndpointOptions,
  type ResolvedFingerprint,
  type ResolvedIdempotencyOptions,
} from './idempotency.options';

/** The replay cache's largest budget: its answers live in one buffer (`replay-cache.arena.ts`). */
const MAX_REPLAY_CACHE_BYTES = 2 ** 30;

/**
 * The module options with every default, and their validation: merged once for forRoot and
 * forRootAsync (`resolveOptions`), then per handler with `@Idempotent()` overrides
 * (`resolveEndpointOptions`).
 * @internal
 */
export const DEFAULT_OPTIONS: ResolvedIdempotencyOptions = {
  mode: 'transactional',
  ttl: 24 * 60 * 60 * 1000,
  leaseMs: 10_000,
  required: true,
  headerName: 'Idempotency-Key',
  replayedHeaderName: 'Idempotency-Replayed',
  maxKeyLength: 255,
  storedHeaders: DEFAULT_STORED_HEADERS,
  maxResponseBytes: 1024 * 1024,
  oversizedResponse: 'reject',
  storeStatus: defaultStoreStatus,
  mismatchStatus: 422,
  inProgress: { policy: 'reject', maxWaitMs: 5000, pollIntervalMs: 100 },
  retryAfterSeconds: 1,
  fingerprint: { headers: [], excludeBodyPaths: [], includeBodyPaths: [] },
  strayWrites: defaultStrayWrites(),
  lockTimeoutMs: 100,
  problemDetailsFilter: true,
  tables: {
    idempotency: 'idempotency_records',
    outbox: 'outbox_messages',
    inbox: 'inbox_messages',
  },
  outbox: {
    relayEnabled: true,
    pollIntervalMs: 1000,
    batchSize: 100,
    leaseMs: 30_000,
    maxAttempts: 10,
    backoffBaseMs: 1000,
    backoffMaxMs: 300_000,
    ordered: false,
    requireTransaction: true,
    wakeOnCommit: true,
    publishTimeoutMs: 10_000,
    shutdownTimeoutMs: 15_000,
  },
  inbox: {
    acknowledge: 'auto',
    maxAttempts: 5,
    onMaxAttempts: 'ack',
    strayWrites: defaultStrayWrites(),
    backoffBaseMs: 1000,
    backoffMaxMs: 60_000,
  },
  cleanup: {
    enabled: true,
    intervalMs: 60_000,
    batchSize: 1000,
    timeBudgetMs: 5000,
    dutyCycle: 0.25,
    outboxRetentionMs: 7 * 24 * 60 * 60 * 1000,
    inboxRetentionMs: 7 * 24 * 60 * 60 * 1000,
  },
  replayCache: { maxBytes: 16 * 1024 * 1024, maxAgeMs: 60_000, storeTimeoutMs: 100 },
  health: {
    relayHeartbeatTimeoutMs: 30_000,
    maxPendingAgeMs: 5 * 60 * 1000,
    maxDeadLetters: Number.POSITIVE_INFINITY,
  },
};

const STRAY_WRITES = new Set<unknown>(['error', 'warn', 'ignore']);

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

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
    inbox: { ...DEFAULT_OPTIONS.inbox, strayWrites, ...stripUndefined(options.inbox ?? {}) },
    cleanup: { ...DEFAULT_OPTIONS.cleanup, ...stripUndefined(options.cleanup ?? {}) },
    health: { ...DEFAULT_OPTIONS.health, ...stripUndefined(options.health ?? {}) },
    replayCache:
      options.replayCache === false
        ? false
        : {
            ...(DEFAULT_OPTIONS.replayCache as Required<Omit<ReplayCacheOptions, 'store'>>),
            ...stripUndefined(options.replayCache ?? {}),
          },
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

/** A function or `false` replaces the fingerprint; an object tunes the default one. */
function mergeFingerprint(
  base: ResolvedFingerprint,
  override: IdempotencyEndpointOptions['fingerprint'],
): ResolvedFingerprint {
  if (override === undefined) return base;
  if (override === false || typeof override === 'function') return override;
  const from = typeof base === 'object' ? base : DEFAULT_OPTIONS.fingerprint;
  return { ...(from as Required<FingerprintOptions>), ...stripUndefined(override) };
}

/** The gate's own answer headers are never stored (a replay sets them anew). */
function withoutGateHeaders(o: ResolvedIdempotencyOptions): string[] {
  if (!Array.isArray(o.storedHeaders)) return o.storedHeaders;
  const own = [o.replayedHeaderName, o.statusHeader].map((h) => h?.toLowerCase());
  return o.storedHeaders.filter((h) => !own.includes(h));
}

function statusHeaderName(v: boolean | string | undefined): string | undefined {
  if (v === undefined || v === false) return undefined;
  return v === true ? 'Idempotency-Status' : v;
}

/** Checks of the HTTP gate's own settings (in-progress policy, oversized answers, statuses). */
function validateGateOptions(o: ResolvedIdempotencyOptions, fail: (msg: string) => void): void {
  const p = o.inProgress;
  if (p.policy !== 'reject' && p.policy !== 'wait')
    fail(`inProgress.policy must be 'reject' or 'wait', got ${String(p.policy)}`);
  if (!(p.maxWaitMs >= 0)) fail('inProgress.maxWaitMs must be >= 0');
  if (!(p.pollIntervalMs > 0))
    fail('inProgress.pollIntervalMs must be a positive number of milliseconds');
  if (o.oversizedResponse !== 'reject' && o.oversizedResponse !== 'store-status-only') {
    fail(
      `oversizedResponse must be 'reject' or 'store-status-only', got ${String(o.oversizedResponse)}`,
    );
  }
  if (!STRAY_WRITES.has(o.strayWrites))
    fail(`strayWrites must be 'error', 'warn' or 'ignore', got ${String(o.strayWrites)}`);
  if (typeof o.storeStatus !== 'function')
    fail('storeStatus must be a function (status) => boolean');
  if (!(Number.isInteger(o.retryAfterSeconds) && o.retryAfterSeconds >= 0))
    fail('retryAfterSeconds must be a whole number >= 0');
  if (!Array.isArray(o.storedHeaders)) fail('storedHeaders must be an array of header names');
  const f = o.fingerprint;
  if (f !== false && typeof f !== 'function') {
    if (typeof f !== 'object' || f === null)
      fail(
        'fingerprint must be an object of options, a function (request) => string | Buffer, or false',
      );
    else if (
      !Array.isArray(f.headers) ||
      !Array.isArray(f.excludeBodyPaths) ||
      !Array.isArray(f.includeBodyPaths)
    )
      fail(
        'fingerprint.headers, fingerprint.excludeBodyPaths and fingerprint.includeBodyPaths must be arrays',
      );
  }
  for (const [name, fn] of [
    ['keyResolver', o.keyResolver],
    ['skip', o.skip],
    ['onEvent', o.onEvent],
  ] as const) {
    if (fn !== undefined && typeof fn !== 'function') fail(`${name} must be a function`);
  }
  for (const [name, header] of [
    ['replayedHeaderName', o.replayedHeaderName],
    ['statusHeader', o.statusHeader],
  ] as const) {
    if (header !== undefined && !HEADER_TOKEN.test(header))
      fail(`${name} "${String(header)}" is not a valid header name`);
  }
}

const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function validateOptions(o: ResolvedIdempotencyOptions): void {
  const fail = (msg: string) => {
    throw new Error(`IdempotencyModule: ${msg}`);
  };
  if (o.mode !== 'transactional' && o.mode !== 'leased')
    fail(`mode must be 'transactional' or 'leased', got ${String(o.mode)}`);
  if (!(o.ttl > 0)) fail('ttl must be a positive number of milliseconds');
  if (!(o.leaseMs > 0)) fail('leaseMs must be a positive number of milliseconds');
  if (!(o.maxKeyLength >= 1 && o.maxKeyLength <= 255))
    fail('maxKeyLength must be between 1 and 255');
  if (!(o.maxResponseBytes > 0)) fail('maxResponseBytes must be positive');
  if (o.mismatchStatus !== 422 && o.mismatchStatus !== 409)
    fail('mismatchStatus must be 422 or 409');
  if (!HEADER_TOKEN.test(o.headerName))
    fail(`headerName "${o.headerName}" is not a valid header name`);
  if (!(o.lockTimeoutMs >= 0)) fail('lockTimeoutMs must be >= 0');
  validateGateOptions(o, fail);
  for (const [k, v] of Object.entries(o.tables))
    if (!IDENTIFIER.test(v)) fail(`table name for ${k} is not a plain identifier: ${v}`);
  if (o.schema !== undefined && !IDENTIFIER.test(o.schema))
    fail(`schema is not a plain identifier: ${o.schema}`);
  if (o.cleanup.batchSize < 1 || o.cleanup.batchSize > 4000)
    fail('cleanup.batchSize must be between 1 and 4000');
  validateOutboxOptions(o.outbox, fail);
  if (!STRAY_WRITES.has(o.inbox.strayWrites))
    fail(
      `inbox.strayWrites must be 'error', 'warn' or 'ignore', got ${String(o.inbox.strayWrites)}`,
    );
  if (!['auto', true, false].includes(o.inbox.acknowledge))
    fail(`inbox.acknowledge must be 'auto', true or false, got ${String(o.inbox.acknowledge)}`);
  const inboxBackoff = inboxBackoffProblem(o.inbox);
  if (inboxBackoff) fail(inboxBackoff);
  if (!(o.cleanup.intervalMs > 0))
    fail('cleanup.intervalMs must be a positive number of milliseconds');
  if (!(o.cleanup.timeBudgetMs > 0))
    fail('cleanup.timeBudgetMs must be a positive number of milliseconds');
  if (!(o.cleanup.dutyCycle > 0 && o.cleanup.dutyCycle <= 1))
    fail('cleanup.dutyCycle must be greater than 0 and at most 1');
  if (o.replayCache !== false) {
    if (!(o.replayCache.maxBytes >= 0)) fail('replayCache.maxBytes must be >= 0');
    if (o.replayCache.maxBytes > MAX_REPLAY_CACHE_BYTES)
      fail(
        `replayCache.maxBytes must be at most 1 GiB (${MAX_REPLAY_CACHE_BYTES}): the answers are kept in one buffer; use replayCache.store to share more`,
      );
    if (!(o.replayCache.maxAgeMs >= 0)) fail('replayCache.maxAgeMs must be >= 0');
    if (!(o.replayCache.storeTimeoutMs > 0))
      fail('replayCache.storeTimeoutMs must be a positive number of milliseconds');
    const store = o.replayCache.store as unknown;
    if (
      store !== undefined &&
      !(
        typeof store === 'object' &&
        store !== null &&
        ['get', 'set', 'delete'].every(
          (m) => typeof (store as Record<string, unknown>)[m] === 'function',
        )
      )
    )
      fail(
        'replayCache.store must have get(key), set(key, value, ttlMs) and delete(key) methods: pass new RedisReplayCacheStore(redisClient), or your own ReplayCacheStore',
      );
  }
  if (!(o.cleanup.outboxRetentionMs >= 0)) fail('cleanup.outboxRetentionMs must be >= 0');
  if (!(o.cleanup.inboxRetentionMs >= 0)) fail('cleanup.inboxRetentionMs must be >= 0');
  if (!(o.health.relayHeartbeatTimeoutMs > 0))
    fail('health.relayHeartbeatTimeoutMs must be a positive number of milliseconds');
  if (!(o.health.maxPendingAgeMs > 0))
    fail('health.maxPendingAgeMs must be a positive number of milliseconds');
  if (!(o.health.maxDeadLetters >= 0)) fail('health.maxDeadLetters must be >= 0');
}

/** Outbox defaults; an unset publishTimeoutMs follows a short leaseMs (half of it) so that it stays below the lease. */
function resolveOutboxOptions(raw: OutboxOptions = {}): ResolvedIdempotencyOptions['outbox'] {
  const o = { ...DEFAULT_OPTIONS.outbox, ...stripUndefined(raw) };
  if (raw.publishTimeoutMs === undefined)
    o.publishTimeoutMs = Math.min(
      DEFAULT_OPTIONS.outbox.publishTimeoutMs,
      Math.floor(o.leaseMs / 2),
    );
  if (raw.shutdownTimeoutMs === undefined) o.shutdownTimeoutMs = o.publishTimeoutMs + 5000;
  return o;
}

function validateOutboxOptions(
  o: ResolvedIdempotencyOptions['outbox'],
  fail: (msg: string) => void,
): void {
  if (!(o.pollIntervalMs > 0))
    fail('outbox.pollIntervalMs must be a positive number of milliseconds');
  if (!(Number.isInteger(o.batchSize) && o.batchSize >= 1 && o.batchSize <= 1000))
    fail('outbox.batchSize must be an integer between 1 and 1000');
  if (!(o.leaseMs > 0)) fail('outbox.leaseMs must be a positive number of milliseconds');
  if (!(o.publishTimeoutMs > 0))
    fail('outbox.publishTimeoutMs must be a positive number of milliseconds');
  if (!(o.publishTimeoutMs < o.leaseMs)) {
    fail(
      `outbox.publishTimeoutMs (${o.publishTimeoutMs}) must be below outbox.leaseMs (${o.leaseMs}): a batch must be settled before its lease lapses`,
    );
  }
  if (!(Number.isInteger(o.maxAttempts) && o.maxAttempts >= 1))
    fail('outbox.maxAttempts must be an integer >= 1');
  if (!(o.shutdownTimeoutMs > 0))
    fail('outbox.shutdownTimeoutMs must be a positive number of milliseconds');
  if (!(o.backoffBaseMs >= 0)) fail('outbox.backoffBaseMs must be >= 0');
  if (!(o.backoffMaxMs >= o.backoffBaseMs))
    fail('outbox.backoffMaxMs must be >= outbox.backoffBaseMs');
  validateOutboxRouting(o, fail);
}
