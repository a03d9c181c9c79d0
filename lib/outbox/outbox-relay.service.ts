import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  OnApplicationBootstrap,
  Optional,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ExactlyOnceEvents } from '../events/exactly-once.events';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger, type LibraryLogLevel } from '../observability/library-logger';
import { MetricsService } from '../observability/metrics.service';
import { tracePublish, type PublishTrace } from '../observability/outbox.tracing';
import { OutboxStore } from './outbox.store';
import type { OutboxRow } from '../persistence/dialects';
import { outboxAfterPublish } from '../diagnostics/diagnostics.channels';
import { outboxBackoffMs } from './outbox-backoff';
import {
  appendFailure,
  decideFailure,
  errorClassOf,
  isNonRetryable,
  type OutboxFailureDecision,
} from './outbox-failure.policy';
import { OUTBOX_HEADERS, OUTBOX_LIMITS } from './outbox.constants';
import { NO_PUBLISHER, UNAVAILABLE_NOTE, UNREADABLE_PAYLOAD } from './outbox.messages';
import { isPublisherUnavailable } from './outbox-unavailable';
import { isDatabaseUnavailable } from '../persistence/database-unavailable';
import { publishWithin } from './outbox-publish';
import { markSentWithRetries, settleWithRetries } from './outbox-settle';
import type { OutboxMessage } from './outbox-message.interface';
import { OutboxPublisher } from './outbox-publisher.interface';
import { OutboxWakeSignal } from './outbox-wake.signal';
import { DEFAULT_ROUTE } from './outbox-routing.options';
import { InProcessPublisher } from './publishers/in-process.publisher';

/**
 * Why the relay of this process is backing off as a whole: `broker`, the publisher could not
 * reach it (no attempt of the messages was counted); `database`, the database behind the relay
 * could not be reached; `error`, a pass failed otherwise.
 */
export interface OutboxRelayOutage {
  reason: 'broker' | 'database' | 'error';
  /** When the first failed pass of this outage ended. */
  since: Date;
  /** Passes that failed in a row (probes included). */
  passes: number;
  /** The last error (text). */
  lastError: string;
  /** Delay before the next pass, in ms. */
  retryInMs: number;
}

/** What the relay of this process is doing, for health checks and metrics. */
export interface OutboxRelayStatus {
  /** `idle`: not started (disabled, no publisher) or stopped. */
  state: 'idle' | 'running' | 'stopping';
  relayId: string;
  /** Start of the last loop pass (a stuck relay stops updating it). */
  heartbeatAt: Date | null;
  batches: number;
  published: number;
  failed: number;
  dead: number;
  /** Publishes that found the broker unreachable (given back, no attempt counted). */
  unavailable: number;
  /** Set while the relay backs off as a whole (broker or database unreachable); null otherwise. */
  outage: OutboxRelayOutage | null;
  /**
   * Per named publisher (`default` for the `outbox.publisher` option): its counters, and its
   * outage while its broker is unreachable. A publisher that backs off does not hold the others:
   * the relay claims only the messages of publishers that are not backing off; when every
   * publisher is, the relay backs off as a whole (`outage`, reason `broker`).
   */
  publishers: Record<string, OutboxPublisherStatus>;
}

/** What one named publisher of the relay is doing. */
export interface OutboxPublisherStatus {
  published: number;
  failed: number;
  dead: number;
  unavailable: number;
  /** Set while this publisher's broker is unreachable (its messages wait, others flow). */
  outage: OutboxRelayOutage | null;
}

/** Outcome of one claimed batch. */
export interface OutboxBatchResult {
  claimed: number;
  published: number;
  failed: number;
  dead: number;
  /** Rows given back unpublished (the relay was stopping). */
  released: number;
  /** Rows given back unpublished because the broker was unreachable (no attempt counted). */
  unavailable: number;
  /** The first error of those, when `unavailable` > 0. */
  unavailableError?: string;
  /** The publishers whose broker was unreachable in this pass (by name). */
  unavailableBy?: Record<string, string>;
}

/** The relay's publishers by name (what `runOnce` takes besides a single publisher). */
export type OutboxPublishers = ReadonlyMap<string, OutboxPublisher>;

/**
 * The outbox relay: started at application bootstrap, stopped before shutdown. Each pass claims
 * a batch of the oldest due messages under a lease (safe with any number of relays on one
 * database), publishes them through the `OutboxPublisher`, waits for the broker's confirmation,
 * then marks them sent; a failed message is retried later with exponential backoff and jitter
 * (or `outbox.backoff`), and becomes dead after `outbox.maxAttempts` (or its type's
 * `outbox.maxAttemptsByType`), at once for a `NonRetryableError` or when `outbox.retryIf` says
 * no; each failed attempt is kept in the message's failure history (outbox-failure.policy.ts). A publish that failed because the broker could not
 * be reached (outbox-unavailable.ts) is no attempt: the message is given back as it was and the
 * relay backs off as a whole (growing, jittered, capped delay) until a pass goes through again,
 * and likewise when the database behind it cannot be reached. It polls every
 * `outbox.pollIntervalMs`, claims again at once while batches come back full (or, under
 * ordering, while they publish keyed messages, whose keys' next messages then become due), and is woken at
 * once when a transaction of this process that added outbox rows commits. A relay that dies mid-batch loses its lease and
 * another relay publishes the batch again (at-least-once: consumers de-duplicate by message id).
 *
 * On shutdown it stops claiming, lets the in-flight batch finish (each publish is bounded by
 * `outbox.publishTimeoutMs`) and marks it, or releases rows it had not started publishing; it
 * waits at most `outbox.shutdownTimeoutMs` for that, then lets the app close (rows it still
 * holds are published again once their lease lapses).
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, BeforeApplicationShutdown {
  /** Identifies this relay in lease owners (`<host>/<pid>/<random>#<batch>`). */
  readonly relayId = `${hostname().slice(0, 64)}/${process.pid}/${randomUUID().slice(0, 8)}`;
  protected readonly logger = new LibraryLogger(this.options.logger, 'OutboxRelay');
  private publishers: OutboxPublishers | undefined;
  /** Per publisher name: counters and outage. */
  private readonly perPublisher = new Map<
    string,
    OutboxPublisherStatus & { retryAt: number; recoveredLogged?: boolean }
  >();
  private state: OutboxRelayStatus['state'] = 'idle';
  private loop: Promise<void> | undefined;
  private interruptSleep: (() => void) | undefined;
  private woken = false;
  private batchNo = 0;
  private unsubscribe: (() => void) | undefined;
  private stopGauge: (() => void) | undefined;
  /** A backoff sleep: a wake-up (new rows committed) does not cut it short, only stop() does. */
  private backingOff = false;
  /** The loop's own pass is running (per-publisher backoff applies). */
  private inLoop = false;
  /**
   * The last pass published and marked a keyed message: under ordering the key's next message
   * has just become claimable (it was held back behind this one), so the loop claims again at
   * once instead of waiting for the next poll.
   */
  private keyHeadsMoved = false;
  private outage: OutboxRelayOutage | null = null;
  private readonly counters = {
    heartbeatAt: null as Date | null,
    batches: 0,
    published: 0,
    failed: 0,
    dead: 0,
    unavailable: 0,
  };

  constructor(
    private readonly store: OutboxStore,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly moduleRef: ModuleRef,
    private readonly signal: OutboxWakeSignal,
    private readonly metrics: MetricsService,
    @Optional() private readonly events: ExactlyOnceEvents = new ExactlyOnceEvents(options),
  ) {}

  /** Nest lifecycle hook: starts the relay with the app's `OutboxPublisher`, unless `outbox.relayEnabled` is false. */
  onApplicationBootstrap(): void {
    if (!this.options.outbox.relayEnabled) return;
    const publishers = this.resolvePublishers();
    if (!publishers.size) {
      this.log('log', 'relay.not-started', { reason: NO_PUBLISHER });
      return;
    }
    this.start(publishers);
  }

  /** Nest lifecycle hook: stops the relay, waiting up to `outbox.shutdownTimeoutMs` for the batch in flight. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /** Starts the loop (bootstrap does it when `outbox.relayEnabled`); a no-op when running. */
  start(publisher?: OutboxPublisher | OutboxPublishers): void {
    if (this.state !== 'idle') return;
    const p = publisher ? asPublishers(publisher) : (this.publishers ?? this.resolvePublishers());
    if (!p.size) throw new Error(NO_PUBLISHER);
    this.publishers = p;
    for (const [name, x] of p) {
      this.publisherStatus(name);
      if (x instanceof InProcessPublisher) x.rearm();
    }
    this.state = 'running';
    this.unsubscribe = this.signal.subscribe(() => this.wake());
    this.stopGauge = this.metrics.observeRelay(() => (this.outage ? 1 : 0));
    this.loop = this.run().finally(() => {
      this.state = 'idle';
      this.outage = null;
      this.unsubscribe?.();
      this.unsubscribe = undefined;
      this.stopGauge?.();
      this.stopGauge = undefined;
    });
  }

  /**
   * Stops claiming, finishes (or releases) the in-flight batch, and resolves when the loop has
   * ended, or after `outbox.shutdownTimeoutMs` (default: the configured one) when it has not: a
   * publish or a database statement that hangs does not hold the app's shutdown. Rows the loop
   * still holds then stay pending under their lease and are claimed again once it lapses.
   */
  async stop(timeoutMs: number = this.options.outbox.shutdownTimeoutMs): Promise<void> {
    if (this.state === 'running') this.state = 'stopping';
    // In-process handlers see their AbortSignal aborted; what they give up is retried later.
    for (const x of this.publishers?.values() ?? []) {
      if (x instanceof InProcessPublisher) x.abortInFlight();
    }
    this.interruptSleep?.();
    const loop = this.loop;
    if (!loop) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      loop.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
        timer.unref?.();
      }),
    ]).finally(() => clearTimeout(timer));
    if (timedOut) this.log('warn', 'relay.stop-timed-out', { relayId: this.relayId, timeoutMs });
  }

  /** Claims again at once instead of at the next poll (new rows were committed in this process). */
  wake(): void {
    this.woken = true;
    if (!this.backingOff) this.interruptSleep?.();
  }

  /** The relay's state, id, last heartbeat and counts, as the health indicator reads them. */
  get status(): OutboxRelayStatus {
    return {
      state: this.state,
      relayId: this.relayId,
      ...this.counters,
      outage: this.outage ? { ...this.outage } : null,
      publishers: Object.fromEntries(
        [...this.perPublisher].map(([name, { retryAt: _r, recoveredLogged: _l, ...x }]) => [
          name,
          { ...x, outage: x.outage ? { ...x.outage } : null },
        ]),
      ),
    };
  }

  /**
   * One pass: claims a batch, publishes it and marks the outcome. The loop calls it; it can be
   * called directly (e.g. to drain the outbox in a script) with the relay stopped.
   */
  async runOnce(
    publisher: OutboxPublisher | OutboxPublishers | undefined = this.publishers ??
      this.resolvePublishers(),
  ): Promise<OutboxBatchResult> {
    const publishers = publisher ? asPublishers(publisher) : new Map<string, OutboxPublisher>();
    if (!publishers.size) throw new Error(NO_PUBLISHER);
    const o = this.options.outbox;
    const owner = `${this.relayId}#${++this.batchNo}`;
    const result: OutboxBatchResult = {
      claimed: 0,
      published: 0,
      failed: 0,
      dead: 0,
      released: 0,
      unavailable: 0,
    };
    // Publishers whose broker is unreachable wait for their own retry time; the others go on.
    // (In the relay's loop; a direct call, e.g. a drain script, tries every publisher.)
    const now = Date.now();
    const routes = [...publishers.keys()].filter(
      (name) => !this.inLoop || (this.perPublisher.get(name)?.retryAt ?? 0) <= now,
    );
    if (!routes.length) return result;
    const rows = await this.store.claim({
      owner,
      limit: o.batchSize,
      leaseMs: o.leaseMs,
      ordered: o.ordered,
      routes,
    });
    result.claimed = rows.length;
    if (!rows.length) {
      // Every due message of these publishers was looked at: none is waiting on its broker.
      this.trackPublisherOutages(new Set(routes), {});
      return result;
    }
    if (this.state === 'stopping') {
      const seqs = rows.map((r) => r.seq);
      result.released = await settleWithRetries(
        () => this.store.release(seqs, owner),
        this.settleRetried(owner, 'release'),
      );
      return result;
    }
    this.counters.batches++;
    const routeOf = rows.map((r) => r.route ?? DEFAULT_ROUTE);
    const publisherOf = routeOf.map((name) => publishers.get(name)!);
    const { outcomes, messages, traces } = await this.publishAll(publishers, rows, routeOf);
    // A failure because the broker could not be reached is no attempt of the message.
    // A NonRetryableError is a verdict on the message, never an unreachable broker.
    const unreachable = outcomes.map(
      (e, i) =>
        !!e && !!messages[i] && !isNonRetryable(e) && isPublisherUnavailable(publisherOf[i]!, e),
    );
    // The failure control (outbox-failure.policy.ts): dead at once, dead at the type's max
    // attempts, or pending again after the backoff.
    const decisions = rows.map((row, i): OutboxFailureDecision | undefined => {
      const error = outcomes[i];
      if (!error || unreachable[i]) return undefined;
      return decideFailure(
        { attempt: row.attempts + 1, error, type: row.type, message: messages[i] },
        o,
        (option, problem) =>
          this.log('warn', 'policy-failed', { messageId: row.id, type: row.type, option, problem }),
      );
    });
    rows.forEach((row, i) => {
      const attempt = row.attempts + 1;
      const dead = !!decisions[i]?.dead;
      traces[i]?.end(outcomes[i], unreachable[i] ? row.attempts : attempt, dead);
    });
    const sent = rows.filter((_, i) => !outcomes[i]);
    if (outboxAfterPublish.hasSubscribers) {
      outboxAfterPublish.publish({
        owner,
        published: sent.length,
        failed: rows.length - sent.length,
      });
    }
    if (sent.length) {
      const marked = await markSentWithRetries(
        this.store,
        sent,
        owner,
        this.settleRetried(owner, 'mark-sent'),
      );
      if (marked < sent.length) {
        // Our lease lapsed and another relay took some rows over: it publishes them again.
        this.log('warn', 'lease-lost', { owner, published: sent.length, marked });
        if (this.events.observed('relay')) {
          this.events.emit({
            type: 'relay.lease-lost',
            kind: 'lease-lost',
            owner,
            published: sent.length,
            marked,
          });
        }
      }
      result.published = sent.length;
      this.counters.published += sent.length;
      if (o.ordered && sent.some((r) => r.partitionKey !== null)) this.keyHeadsMoved = true;
      const published = messages.filter((m, i): m is OutboxMessage => !!m && !outcomes[i]);
      const at = Date.now();
      rows.forEach((_, i) => {
        const m = messages[i];
        if (outcomes[i] || !m) return;
        const attrs = { publisher: routeOf[i]! };
        this.publisherStatus(routeOf[i]!).published++;
        this.metrics.outboxPublished.add(1, attrs);
        this.metrics.outboxPublishLag.record(Math.max(0, at - m.createdAt.getTime()), attrs);
      });
      this.onPublished(published);
      if (this.events.observed('relay')) {
        for (const row of sent) {
          this.events.emit({
            type: 'relay.published',
            kind: 'published',
            messageId: row.id,
            eventType: row.type,
            attempts: row.attempts + 1,
          });
        }
      }
    }
    const heldBack = rows.filter((_, i) => unreachable[i]);
    if (heldBack.length) {
      const by: Record<string, string> = {};
      rows.forEach((_, i) => {
        if (unreachable[i] && by[routeOf[i]!] === undefined) {
          by[routeOf[i]!] = errorText(outcomes[i]);
        }
      });
      const text = Object.values(by)[0]!;
      result.unavailable = 0;
      for (const [name, error] of Object.entries(by)) {
        const seqs = rows.filter((_, i) => unreachable[i] && routeOf[i] === name).map((r) => r.seq);
        result.unavailable += await settleWithRetries(
          () =>
            this.store.release(
              seqs,
              owner,
              UNAVAILABLE_NOTE(error).slice(0, OUTBOX_LIMITS.errorLength),
            ),
          this.settleRetried(owner, 'release-unavailable'),
        );
        this.publisherStatus(name).unavailable += seqs.length;
        this.metrics.outboxUnavailable.add(seqs.length, { publisher: name });
      }
      result.unavailableError = text;
      result.unavailableBy = by;
      this.counters.unavailable += heldBack.length;
      this.log('debug', 'unavailable', {
        owner,
        messages: heldBack.length,
        released: result.unavailable,
        publishers: Object.keys(by),
        error: text,
      });
    }
    await Promise.all(
      rows.map(async (row, i) => {
        const error = outcomes[i];
        const decision = decisions[i];
        if (!error || !decision) return;
        const attempt = row.attempts + 1;
        const { dead, retryInMs } = decision;
        const text = errorText(error).slice(0, OUTBOX_LIMITS.errorLength);
        // The row is leased to this batch: nobody else writes its history meanwhile.
        const failures = appendFailure(row.failures, {
          at: new Date().toISOString(),
          attempt,
          relay: this.relayId,
          error: errorClassOf(error),
          message: errorText(error),
        });
        await settleWithRetries(
          () =>
            this.store.markFailed({ seq: row.seq, owner, error: text, retryInMs, dead, failures }),
          this.settleRetried(owner, 'mark-failed'),
        );
        const attrs = { publisher: routeOf[i]! };
        const mine = this.publisherStatus(routeOf[i]!);
        result.failed++;
        this.counters.failed++;
        mine.failed++;
        this.metrics.outboxFailed.add(1, attrs);
        if (dead) {
          result.dead++;
          this.counters.dead++;
          mine.dead++;
          this.metrics.outboxDead.add(1, attrs);
          this.log('error', 'dead', {
            messageId: row.id,
            type: row.type,
            publisher: routeOf[i],
            attempts: attempt,
            reason: decision.deadBecause,
            error: text,
          });
          if (this.events.observed('relay')) {
            this.events.emit({
              type: 'relay.dead',
              kind: 'dead',
              messageId: row.id,
              eventType: row.type,
              attempts: attempt,
              error: text,
            });
          }
        } else {
          this.log('warn', 'failed', {
            messageId: row.id,
            type: row.type,
            publisher: routeOf[i],
            attempts: attempt,
            retryInMs,
            error: text,
          });
          if (this.events.observed('relay')) {
            this.events.emit({
              type: 'relay.retry',
              kind: 'retry',
              messageId: row.id,
              eventType: row.type,
              attempts: attempt,
              retryInMs,
              error: text,
            });
          }
        }
        this.onFailed(row, error, dead);
      }),
    );
    const probed = new Set(rows.length < o.batchSize ? [...routes, ...routeOf] : routeOf);
    this.trackPublisherOutages(probed, result.unavailableBy ?? {});
    this.log('debug', 'batch', { owner, ...result });
    return result;
  }

  /** Called after a batch was confirmed by the broker and marked sent (override for metrics). */
  protected onPublished(_messages: OutboxMessage[]): void {}

  /** Called after a failed attempt was recorded (override for metrics). */
  protected onFailed(_row: OutboxRow, _error: Error, _dead: boolean): void {}

  /**
   * The relay's publishers by name: `outbox.publishers`, plus the one named `default` (the
   * `outbox.publisher` option, else an `OutboxPublisher` provider anywhere in the app).
   */
  protected resolvePublishers(): Map<string, OutboxPublisher> {
    const map = new Map<string, OutboxPublisher>(
      Object.entries(this.options.outbox.publishers ?? {}),
    );
    if (!map.has(DEFAULT_ROUTE)) {
      const fallback = this.resolvePublisher();
      if (fallback) map.set(DEFAULT_ROUTE, fallback);
    }
    return map;
  }

  /** The publisher named `default`: the `outbox.publisher` option, else an `OutboxPublisher` provider anywhere in the app. */
  protected resolvePublisher(): OutboxPublisher | undefined {
    if (this.options.outbox.publisher) return this.options.outbox.publisher;
    try {
      return this.moduleRef.get<OutboxPublisher>(OutboxPublisher, { strict: false }) ?? undefined;
    } catch {
      return undefined;
    }
  }

  /** Turns a claimed row into the message a publisher sees (override to add headers). */
  protected toMessage(row: OutboxRow): OutboxMessage {
    const headers: Record<string, string> = row.headers ? JSON.parse(row.headers) : {};
    headers[OUTBOX_HEADERS.messageId] = row.id;
    headers[OUTBOX_HEADERS.type] = row.type;
    if (row.partitionKey !== null) headers[OUTBOX_HEADERS.partitionKey] = row.partitionKey;
    return {
      id: row.id,
      type: row.type,
      payload: JSON.parse(row.payload),
      headers,
      partitionKey: row.partitionKey,
      seq: row.seq,
      attempts: row.attempts,
      createdAt: row.createdAt,
    };
  }

  /**
   * Publishes every row of the batch through the publisher of its route (each publisher's rows
   * at once, the publishers side by side); one outcome per row (undefined = confirmed) and the
   * messages (by row).
   */
  private async publishAll(
    publishers: OutboxPublishers,
    rows: OutboxRow[],
    routeOf: string[],
  ): Promise<{
    outcomes: Array<Error | undefined>;
    messages: Array<OutboxMessage | undefined>;
    traces: Array<PublishTrace<OutboxMessage> | undefined>;
  }> {
    const timeoutMs = this.options.outbox.publishTimeoutMs;
    const outcomes: Array<Error | undefined> = new Array(rows.length).fill(undefined);
    const byRow: Array<OutboxMessage | undefined> = new Array(rows.length).fill(undefined);
    const traces: Array<PublishTrace<OutboxMessage> | undefined> = new Array(rows.length);
    const groups = new Map<string, { messages: OutboxMessage[]; index: number[] }>();
    rows.forEach((row, i) => {
      const publisher = publishers.get(routeOf[i]!)!;
      try {
        // A `send` span per message, parented by the context stored with it; its own context
        // travels in the message's headers to the consumer (see observability/outbox.tracing.ts).
        traces[i] = tracePublish(this.toMessage(row), publisher.messagingSystem, row.seq);
        byRow[i] = traces[i]!.message;
        const g = groups.get(routeOf[i]!) ?? { messages: [], index: [] };
        g.messages.push(byRow[i]!);
        g.index.push(i);
        groups.set(routeOf[i]!, g);
      } catch (e) {
        outcomes[i] = new Error(UNREADABLE_PAYLOAD((e as Error).message));
      }
    });
    await Promise.all(
      [...groups].map(async ([name, g]) => {
        const results = await publishWithin(publishers.get(name)!, g.messages, timeoutMs);
        results.forEach((outcome, k) => (outcomes[g.index[k]!] = outcome));
      }),
    );
    return { outcomes, messages: byRow, traces };
  }

  /** A publisher's status entry (created on first use). */
  private publisherStatus(name: string) {
    let x = this.perPublisher.get(name);
    if (!x) {
      x = { published: 0, failed: 0, dead: 0, unavailable: 0, outage: null, retryAt: 0 };
      this.perPublisher.set(name, x);
    }
    return x;
  }

  /**
   * After a pass: a publisher whose broker was unreachable backs off on its own (growing,
   * jittered, capped delay: its messages are not claimed before `retryAt`); one that published
   * (or failed a message) in this pass has recovered.
   */
  private trackPublisherOutages(seen: Set<string>, unavailableBy: Record<string, string>): void {
    const o = this.options.outbox;
    const base = o.backoffBaseMs > 0 ? o.backoffBaseMs : o.pollIntervalMs;
    const cap = Math.max(base, Math.min(o.backoffMaxMs, OUTAGE_BACKOFF_CAP_MS));
    for (const name of seen) {
      const x = this.publisherStatus(name);
      const error = unavailableBy[name];
      if (error !== undefined) {
        const passes = (x.outage?.passes ?? 0) + 1;
        const retryInMs = outboxBackoffMs(passes, base, cap);
        if (!x.outage) {
          this.log('warn', 'publisher.backing-off', { publisher: name, retryInMs, error });
        }
        x.outage = {
          reason: 'broker',
          since: x.outage?.since ?? new Date(),
          passes,
          lastError: error,
          retryInMs,
        };
        x.retryAt = Date.now() + retryInMs;
      } else if (x.outage) {
        this.log('log', 'publisher.recovered', {
          publisher: name,
          downMs: Date.now() - x.outage.since.getTime(),
          passes: x.outage.passes,
        });
        x.outage = null;
        x.retryAt = 0;
      }
    }
  }

  /** Whether every publisher of the relay is backing off (the relay then backs off as a whole). */
  private allPublishersDown(): boolean {
    const names = [...(this.publishers?.keys() ?? [])];
    return names.length > 0 && names.every((n) => !!this.perPublisher.get(n)?.outage);
  }

  /** Logs a statement of the batch's outcome that is run again (outbox-settle.ts). */
  private settleRetried(owner: string, statement: string) {
    return (error: unknown, attempt: number) =>
      this.log('warn', 'settle-retried', { owner, statement, attempt, error: String(error) });
  }

  /** One structured log event: message ids and types, never payloads. */
  private log(level: LibraryLogLevel, event: string, fields: object = {}): void {
    this.logger.event(level, `outbox.${event}`, fields);
  }

  private async run(): Promise<void> {
    const o = this.options.outbox;
    this.log('log', 'relay.started', {
      relayId: this.relayId,
      batchSize: o.batchSize,
      pollIntervalMs: o.pollIntervalMs,
      leaseMs: o.leaseMs,
      ordered: o.ordered,
    });
    while (this.state === 'running') {
      this.counters.heartbeatAt = new Date();
      this.woken = false;
      this.keyHeadsMoved = false;
      let full = false;
      let held: Pick<OutboxRelayOutage, 'reason' | 'lastError'> | undefined;
      try {
        this.inLoop = true;
        const r = await this.runOnce(this.publishers).finally(() => (this.inLoop = false));
        full = r.claimed >= o.batchSize;
        if ((r.unavailable > 0 || r.unavailableError !== undefined) && this.allPublishersDown()) {
          held = { reason: 'broker', lastError: r.unavailableError ?? 'unavailable' };
        }
      } catch (e) {
        const error = errorText(e);
        this.log('warn', 'relay.pass-failed', {
          inARow: (this.outage?.passes ?? 0) + 1,
          error,
        });
        held = { reason: isDatabaseUnavailable(e) ? 'database' : 'error', lastError: error };
      }
      if (this.state !== 'running') break;
      if (held) {
        await this.backOff(held);
        // After a relay-wide backoff, every publisher is tried again at once.
        for (const x of this.perPublisher.values()) x.retryAt = 0;
        continue;
      }
      this.recovered();
      if (full || this.woken || this.keyHeadsMoved) continue;
      await this.sleep(this.untilNextPass(o.pollIntervalMs));
    }
    this.log('log', 'relay.stopped', { relayId: this.relayId });
  }

  /**
   * A pass was held back (broker or database unreachable, or it failed): the relay waits as a
   * whole, longer after each such pass in a row (`outbox.backoffBaseMs` doubling, capped at
   * `outbox.backoffMaxMs` and at {@link OUTAGE_BACKOFF_CAP_MS}, equal jitter), then tries again.
   * The first pass of an outage logs `outbox.relay.backing-off`.
   */
  private async backOff(held: Pick<OutboxRelayOutage, 'reason' | 'lastError'>): Promise<void> {
    const o = this.options.outbox;
    const passes = (this.outage?.passes ?? 0) + 1;
    const base = o.backoffBaseMs > 0 ? o.backoffBaseMs : o.pollIntervalMs;
    const cap = Math.max(base, Math.min(o.backoffMaxMs, OUTAGE_BACKOFF_CAP_MS));
    const retryInMs = outboxBackoffMs(passes, base, cap);
    const since = this.outage?.since ?? new Date();
    if (!this.outage || this.outage.reason !== held.reason) {
      this.log('warn', 'relay.backing-off', {
        relayId: this.relayId,
        reason: held.reason,
        retryInMs,
        error: held.lastError,
      });
    }
    this.outage = { ...held, since, passes, retryInMs };
    this.backingOff = true;
    try {
      await this.sleep(retryInMs);
    } finally {
      this.backingOff = false;
    }
  }

  /** A pass went through after an outage: logs `outbox.relay.recovered` once, with how long it lasted. */
  private recovered(): void {
    const outage = this.outage;
    if (!outage) return;
    this.outage = null;
    this.log('log', 'relay.recovered', {
      relayId: this.relayId,
      reason: outage.reason,
      downMs: Date.now() - outage.since.getTime(),
      passes: outage.passes,
    });
  }

  /** The poll interval, or less when a publisher that backs off is due again before it. */
  private untilNextPass(pollMs: number): number {
    let ms = pollMs;
    const now = Date.now();
    for (const x of this.perPublisher.values()) {
      if (x.outage && x.retryAt > now) ms = Math.min(ms, x.retryAt - now);
    }
    return Math.max(1, ms);
  }

  private sleep(ms: number): Promise<void> {
    if ((this.woken && !this.backingOff) || this.state !== 'running') return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.interruptSleep = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.interruptSleep = done;
    });
  }
}

/** Longest relay-wide backoff between passes while the broker or database is unreachable. */
const OUTAGE_BACKOFF_CAP_MS = 10_000;

/** One publisher as the map of publishers it is (named `default`). */
function asPublishers(p: OutboxPublisher | OutboxPublishers): OutboxPublishers {
  return p instanceof Map ? p : new Map([[DEFAULT_ROUTE, p as OutboxPublisher]]);
}

/** An error's text (publishers and drivers sometimes reject with a string). */
function errorText(e: unknown): string {
  return e instanceof Error ? e.message || String(e) : String(e);
}
