import { Inject, Injectable } from '@nestjs/common';
import { MaintenanceStore } from './maintenance.store';
import { ModuleRef } from '@nestjs/core';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { HealthOptions, ResolvedIdempotencyOptions } from '../idempotency.options';
import { stripUndefined } from '../internal/strip-undefined';
import type { OutboxHealthRow } from '../persistence/dialects';
import {
  HEALTH_BACKLOG_OLD,
  HEALTH_DEAD_LETTERS,
  HEALTH_QUERY_FAILED,
  HEALTH_RELAY_STALE,
  HEALTH_RELAY_STOPPED,
} from './maintenance.messages';
import { OutboxRelay, type OutboxRelayStatus } from '../outbox/outbox-relay.service';
import { OutboxStore } from '../outbox/outbox.store';

/** The relay of this process as the indicator sees it. */
export type RelayLiveness = 'running' | 'stale' | 'stopped' | 'not-started' | 'disabled';

/** Details of the indicator's result (under its key). */
export interface OutboxHealthDetails {
  status: 'up' | 'down';
  relay: RelayLiveness;
  /** Milliseconds since the relay in this process last polled (absent when it never did). */
  relayLastPollMsAgo?: number;
  /**
   * Present while the relay of this process backs off as a whole because the broker (or the
   * database) cannot be reached: an outage, not failures (messages keep their attempts). It does
   * not make the check `down` by itself; a long one does through `maxPendingAgeMs`.
   */
  relayBackingOff?: { reason: 'broker' | 'database' | 'error'; forMs: number; lastError: string };
  /**
   * Per publisher of this process's relay (`default` for the `outbox.publisher` option): its
   * pending messages and, while its broker is unreachable, how long it has been backing off.
   * One publisher backing off does not make the check `down`; its ageing messages do, through
   * `maxPendingAgeMs`.
   */
  publishers?: Record<
    string,
    { pending: number; backingOff?: { forMs: number; lastError: string } }
  >;
  /**
   * Pending messages routed to publishers this process's relay does not have (the options
   * changed after they were added): they wait, neither published nor lost, until a relay with
   * that publisher runs or an operator requeues them elsewhere. By route name.
   */
  unroutedPending?: Record<string, number>;
  pending?: number;
  oldestPendingAgeMs?: number;
  deadLetters?: number;
  /** Why it is down. */
  reasons?: string[];
}

/** A @nestjs/terminus `HealthIndicatorResult`: `{ [key]: { status: 'up' | 'down', … } }`. */
export type OutboxHealthResult = Record<string, OutboxHealthDetails>;

/**
 * A health indicator for @nestjs/terminus (v10+: a result with status `down` makes the check
 * answer 503): the relay of this process is alive (its loop started a pass within
 * `health.relayHeartbeatTimeoutMs`; a relay that was started and has stopped is down; skipped when
 * `outbox.relayEnabled` is false here, and only reported while it never started, e.g. no
 * publisher is configured, since the backlog age then tells), the oldest
 * pending outbox message is younger than `health.maxPendingAgeMs` (this covers relays in other
 * processes too), and at most `health.maxDeadLetters` messages are dead. It does not import
 * @nestjs/terminus, so apps without it can call it too.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.outbox.isHealthy('outbox')]); }
 * ```
 */
@Injectable()
export class IdempotencyHealthIndicator {
  constructor(
    private readonly store: MaintenanceStore,
    private readonly moduleRef: ModuleRef,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {}

  /** Checks relay liveness, backlog age and dead letters; thresholds default to the module's `health` options. */
  async isHealthy(key = 'outbox', thresholds: HealthOptions = {}): Promise<OutboxHealthResult> {
    const t = { ...this.options.health, ...stripUndefined(thresholds) };
    const reasons: string[] = [];
    const details: OutboxHealthDetails = { status: 'up', relay: 'disabled' };

    const relay = this.options.outbox.relayEnabled ? this.relayStatus() : undefined;
    if (relay) {
      if (relay.heartbeatAt) {
        details.relayLastPollMsAgo = Math.max(0, Date.now() - relay.heartbeatAt.getTime());
      }
      if (relay.state === 'running') {
        if ((details.relayLastPollMsAgo ?? 0) > t.relayHeartbeatTimeoutMs) {
          details.relay = 'stale';
          reasons.push(
            HEALTH_RELAY_STALE(details.relayLastPollMsAgo ?? 0, t.relayHeartbeatTimeoutMs),
          );
        } else {
          details.relay = 'running';
        }
        if (relay.outage) {
          details.relayBackingOff = {
            reason: relay.outage.reason,
            forMs: Math.max(0, Date.now() - relay.outage.since.getTime()),
            lastError: relay.outage.lastError,
          };
        }
      } else if (relay.heartbeatAt) {
        details.relay = 'stopped';
        reasons.push(HEALTH_RELAY_STOPPED);
      } else {
        details.relay = 'not-started';
      }
    }

    let row: OutboxHealthRow | undefined;
    try {
      row = await this.readOutbox();
    } catch (e) {
      reasons.push(HEALTH_QUERY_FAILED(String((e as Error)?.message ?? e)));
    }
    if (row) {
      details.pending = row.pending;
      details.oldestPendingAgeMs = row.oldestPendingAgeMs;
      details.deadLetters = row.dead;
      if (row.pending > 0 && row.oldestPendingAgeMs > t.maxPendingAgeMs) {
        reasons.push(HEALTH_BACKLOG_OLD(row.oldestPendingAgeMs, t.maxPendingAgeMs));
      }
      if (row.dead > t.maxDeadLetters) {
        reasons.push(HEALTH_DEAD_LETTERS(row.dead, t.maxDeadLetters));
      }
    }

    if (relay && Object.keys(relay.publishers).length) {
      try {
        this.addPublisherDetails(details, relay, await this.readPendingByRoute());
      } catch (e) {
        reasons.push(HEALTH_QUERY_FAILED(String((e as Error)?.message ?? e)));
      }
    }

    if (reasons.length) {
      details.status = 'down';
      details.reasons = reasons;
    }
    return { [key]: details };
  }

  private addPublisherDetails(
    details: OutboxHealthDetails,
    relay: OutboxRelayStatus,
    pendingByRoute: Record<string, number>,
  ): void {
    const publishers: NonNullable<OutboxHealthDetails['publishers']> = {};
    for (const [name, p] of Object.entries(relay.publishers)) {
      publishers[name] = { pending: pendingByRoute[name] ?? 0 };
      if (p.outage) {
        publishers[name].backingOff = {
          forMs: Math.max(0, Date.now() - p.outage.since.getTime()),
          lastError: p.outage.lastError,
        };
      }
    }
    details.publishers = publishers;
    const unrouted = Object.entries(pendingByRoute).filter(([r, n]) => n > 0 && !publishers[r]);
    if (unrouted.length) details.unroutedPending = Object.fromEntries(unrouted);
  }

  /** Pending messages per route (override to read them elsewhere). */
  protected readPendingByRoute(): Promise<Record<string, number>> {
    return this.moduleRef.get(OutboxStore, { strict: false }).pendingByRoute();
  }

  /** The relay of this process, or undefined when there is none. */
  protected relayStatus(): OutboxRelayStatus | undefined {
    try {
      return this.moduleRef.get(OutboxRelay, { strict: false })?.status;
    } catch {
      return undefined;
    }
  }

  /** The outbox figures (override to read them elsewhere). */
  protected readOutbox(): Promise<OutboxHealthRow> {
    return this.store.outboxHealth();
  }
}
