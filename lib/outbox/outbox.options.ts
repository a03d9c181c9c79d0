import { stripUndefined } from '../internal/strip-undefined';
import {
  type OutboxFailureOptionKey,
  type OutboxFailureOptions,
  validateOutboxFailureOptions,
} from './outbox-failure.options';
import type { OutboxPublisher } from './outbox-publisher.interface';
import { type OutboxRoutingOptions, validateOutboxRouting } from './outbox-routing.options';

/*
 * The outbox relay's options (`outbox: {…}` of the module): types, defaults and checks. Merged with the other features' options in
 * idempotency-options.resolver.ts (the one place where defaults are applied).
 */

/**
 * The transactional outbox and its relay (`outbox: {…}` of the module). Failure control
 * (`retryIf`, `backoff`, `maxAttemptsByType`): outbox-failure.options.ts.
 */
export interface OutboxOptions extends OutboxFailureOptions, OutboxRoutingOptions {
  /** Run the relay in this process. Default true. */
  relayEnabled?: boolean;
  /** Poll interval in ms. Default 1000. */
  pollIntervalMs?: number;
  /** Messages claimed per batch. Default 100. */
  batchSize?: number;
  /** How long a claimed batch belongs to its relay, in ms. Default 30 s. */
  leaseMs?: number;
  /** Publish attempts before a message becomes dead. Default 10. */
  maxAttempts?: number;
  /** Backoff base of a failed publish, in ms (doubled per attempt, with jitter). Default 1000. */
  backoffBaseMs?: number;
  /** Longest backoff between two publish attempts of one message, in ms. Default 300000. */
  backoffMaxMs?: number;
  /**
   * Per partition key, publish messages in the order their transactions committed, one at a
   * time: a key's message is not published while an older one of the key is pending (due or
   * delayed, failed and waiting for its retry, or in flight). Keyed messages are inserted right
   * before their transaction's COMMIT under a per-key lock (see docs/outbox.md). Default true.
   * `false`: no ordering at all: a key's messages are published in parallel, in any order (and
   * a failed one is overtaken by the next); rows are inserted at `add()`.
   * Every process of the app must use the same value.
   */
  ordered?: boolean;
  /** Throw when `add()` is called with no ambient transaction and no explicit EntityManager. Default true. */
  requireTransaction?: boolean;
  /** Wake the relay in this process when a transaction with outbox rows commits. Default true. */
  wakeOnCommit?: boolean;
  /**
   * Longest wait for the broker to confirm one message (or a batch, for publishers that publish
   * batches), in ms; then the attempt counts as failed. Must be below `leaseMs`. Default 10000,
   * or half of `leaseMs` when that is shorter.
   */
  publishTimeoutMs?: number;
  /**
   * Longest wait on shutdown for the relay to finish its in-flight batch, in ms; then it stops
   * waiting (rows it still holds stay pending under their lease and are published again once it
   * lapses: nothing is lost). Bounds `app.close()` whatever the broker or database is doing.
   * Default `publishTimeoutMs` + 5000.
   */
  shutdownTimeoutMs?: number;
  /**
   * The publisher the relay sends through. Default: the `OutboxPublisher` provider registered
   * anywhere in the app (none: the relay does not start).
   */
  publisher?: OutboxPublisher;
}

/** The outbox options with every default applied. */
export type ResolvedOutboxOptions = Required<
  Omit<OutboxOptions, 'publisher' | OutboxFailureOptionKey | keyof OutboxRoutingOptions>
> &
  Pick<OutboxOptions, 'publisher' | OutboxFailureOptionKey | keyof OutboxRoutingOptions>;

/** The outbox defaults. @internal */
export const OUTBOX_DEFAULTS: ResolvedOutboxOptions = {
  relayEnabled: true,
  pollIntervalMs: 1000,
  batchSize: 100,
  leaseMs: 30_000,
  maxAttempts: 10,
  backoffBaseMs: 1000,
  backoffMaxMs: 300_000,
  ordered: true,
  requireTransaction: true,
  wakeOnCommit: true,
  publishTimeoutMs: 10_000,
  shutdownTimeoutMs: 15_000,
};

/**
 * Outbox defaults; an unset publishTimeoutMs follows a short leaseMs (half of it) so that it
 * stays below the lease. @internal
 */
export function resolveOutboxOptions(raw: OutboxOptions = {}): ResolvedOutboxOptions {
  const o = { ...OUTBOX_DEFAULTS, ...stripUndefined(raw) };
  if (raw.publishTimeoutMs === undefined) {
    o.publishTimeoutMs = Math.min(OUTBOX_DEFAULTS.publishTimeoutMs, Math.floor(o.leaseMs / 2));
  }
  if (raw.shutdownTimeoutMs === undefined) o.shutdownTimeoutMs = o.publishTimeoutMs + 5000;
  return o;
}

/** Checks of the outbox options. @internal */
export function validateOutboxOptions(o: ResolvedOutboxOptions, fail: (msg: string) => void): void {
  if (!(o.pollIntervalMs > 0)) {
    fail('outbox.pollIntervalMs must be a positive number of milliseconds');
  }
  if (!(Number.isInteger(o.batchSize) && o.batchSize >= 1 && o.batchSize <= 1000)) {
    fail('outbox.batchSize must be an integer between 1 and 1000');
  }
  if (!(o.leaseMs > 0)) fail('outbox.leaseMs must be a positive number of milliseconds');
  if (!(o.publishTimeoutMs > 0)) {
    fail('outbox.publishTimeoutMs must be a positive number of milliseconds');
  }
  if (!(o.publishTimeoutMs < o.leaseMs)) {
    fail(
      `outbox.publishTimeoutMs (${o.publishTimeoutMs}) must be below outbox.leaseMs (${o.leaseMs}): a batch must be settled before its lease lapses`,
    );
  }
  if (!(Number.isInteger(o.maxAttempts) && o.maxAttempts >= 1)) {
    fail('outbox.maxAttempts must be an integer >= 1');
  }
  if (!(o.shutdownTimeoutMs > 0)) {
    fail('outbox.shutdownTimeoutMs must be a positive number of milliseconds');
  }
  if (!(o.backoffBaseMs >= 0)) fail('outbox.backoffBaseMs must be >= 0');
  if (!(o.backoffMaxMs >= o.backoffBaseMs)) {
    fail('outbox.backoffMaxMs must be >= outbox.backoffBaseMs');
  }
  validateOutboxFailureOptions(o, fail);
  validateOutboxRouting(o, fail);
}
