import { Inject, Injectable, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import type { InboxEvent } from '../events/exactly-once-event';
import { ExactlyOnceEvents } from '../events/exactly-once.events';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { InboxOptions, ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';
import { MetricsService } from '../observability/metrics.service';
import { QueryRunnerAlreadyReleasedError } from 'typeorm';
import { DatabaseService } from '../persistence/database.service';
import { isDatabaseConnectionLost } from '../persistence/database-unavailable';
import { ReadFirstPolicy } from '../persistence/read-first.policy';
import type { InboxClaim, InboxRow } from '../persistence/dialects';
import { settledClaim } from '../persistence/dialects';
import { retryWithJitter } from '../internal/jittered-retry';
import { stripUndefined } from '../internal/strip-undefined';
import { InboxMessageFailedError } from './inbox.errors';
import { InboxStore } from './inbox.store';
import { RmqDeliveryAcknowledger } from './rmq-delivery.acknowledger';
import { InboxDeliveries } from './inbox-deliveries.registry';
import { inboxBackoffProblem, inboxRetryDelayMs } from './inbox-backoff';
import { KafkaOffsetCommitter } from './kafka-offset.committer';
import type { InboxProcessOptions, InboxResult } from './inbox.interfaces';
import {
  CLAIM_RETRIES_EXHAUSTED,
  CONNECTION_LOST,
  CONSUMER_INVALID,
  FAILURE_NOT_RECORDED,
  GAVE_UP,
  MAX_ATTEMPTS_INVALID,
  MESSAGE_ID_INVALID,
  ON_MAX_ATTEMPTS_INVALID,
  STRAY_WRITES_INVALID,
} from './inbox.messages';
import { registerInboxService, unregisterInboxService } from './inbox.registry';

/** Longest consumer name and message id the table holds. */
export const MAX_CONSUMER_LENGTH = 200;
export const MAX_MESSAGE_ID_LENGTH = 255;
/** Longest stored error text. */
const MAX_ERROR_LENGTH = 4000;
/** Claims retried after a deadlock / lock timeout before the delivery fails (the broker redelivers). */
const CLAIM_RETRY = { tries: 5, stepMs: 5, jitterMs: 20 };
/** Claims repeated in one transaction when the record changed under the claim. */
const CLAIM_AGAIN = 3;

/** A delivery as `process()` runs it: the message, its handler and the options in force. */
interface InboxDelivery<T> {
  consumer: string;
  messageId: string;
  handler: () => Promise<T> | T;
  opts: Required<InboxOptions>;
}

/** Marks an attempt whose transaction ended before the handler started. */
class ClaimFailed extends Error {
  constructor(readonly reason: unknown) {
    super('inbox claim failed');
  }
}

/**
 * The inbox: runs a message handler at most once per (consumer, message id) with exactly-once
 * effects. The message id is recorded in the same transaction as the handler's writes (through
 * `TransactionHost.tx`), so either both commit or neither does; a redelivery of a processed
 * message is recognised and skipped. A concurrent delivery of the same message waits for the
 * first one's transaction and then skips (or runs, when the first rolled back). Failed attempts
 * are counted in a separate short transaction, so the count survives the rollback; after
 * `maxAttempts` the message is recorded as failed and acknowledged (or rethrown).
 */
@Injectable()
export class InboxService implements OnModuleInit, OnModuleDestroy {
  protected readonly logger = new LibraryLogger(this.options.logger, 'Inbox');
  /** Per consumer: whether deliveries are mostly redeliveries, which a read answers best. */
  private readonly redeliveries = new ReadFirstPolicy();
  /** Failed attempts counted so far, per error thrown by `process()` (the retry delay grows with it). */
  private readonly failedAttempts = new WeakMap<object, number>();

  constructor(
    protected readonly db: DatabaseService,
    protected readonly metrics: MetricsService,
    @Inject(IDEMPOTENCY_OPTIONS) protected readonly options: ResolvedIdempotencyOptions,
    protected readonly store: InboxStore,
    /** Settles RabbitMQ deliveries for `@IdempotentConsumer()` handlers. @internal */
    readonly acknowledger: RmqDeliveryAcknowledger,
    /** Per transport: how `@IdempotentConsumer()` deliveries are settled and retried. @internal */
    readonly deliveries: InboxDeliveries,
    /** Commits Kafka offsets for `@IdempotentConsumer()` handlers under `autoCommit: false`. @internal */
    @Optional() readonly kafkaOffsets?: KafkaOffsetCommitter,
    /** The library's events (`inbox.processed`, `inbox.duplicate`, `inbox.failed`). @internal */
    @Optional() readonly events: ExactlyOnceEvents = new ExactlyOnceEvents(options),
  ) {}

  /** Nest lifecycle hook: registers this service as the one `@IdempotentConsumer()` handlers run through. */
  onModuleInit(): void {
    registerInboxService(this);
  }

  /** Nest lifecycle hook: unregisters this service, if it is still the registered one. */
  onModuleDestroy(): void {
    unregisterInboxService(this);
  }

  /**
   * Runs `handler` once for this (consumer, message id). Opens its own transaction (or joins the
   * caller's, see below), records the id, runs the handler, commits.
   *
   * - Already processed: the handler does not run; `{ status: 'duplicate' }`.
   * - The handler throws: its effects and the record roll back, the failed attempt is counted and
   *   the error is rethrown, so the broker redelivers. At `maxAttempts` the message is recorded as
   *   failed: `{ status: 'failed' }` under `onMaxAttempts: 'ack'`, the error under `'rethrow'`.
   * - Called inside an active transaction (e.g. an in-process listener of an event emitted in one):
   *   the record and the handler join that transaction and commit or roll back with it; a failure
   *   is then not counted (it cannot be recorded apart from the transaction that holds the record).
   */
  async process<T>(
    consumer: string,
    messageId: string,
    handler: () => Promise<T> | T,
    options: InboxProcessOptions = {},
  ): Promise<InboxResult<T>> {
    this.validate(consumer, messageId);
    const opts = InboxService.checkOptions({ ...this.options.inbox, ...stripUndefined(options) });
    const delivery: InboxDelivery<T> = { consumer, messageId, handler, opts };
    if (this.db.txHost.isTransactionActive()) return this.processJoined(delivery);
    if (this.store.nonBlockingReads && this.redeliveries.readFirst(consumer)) {
      const settled = await this.lookUpSettled(consumer, messageId);
      if (settled) {
        this.redeliveries.observe(consumer, true);
        return this.settle(consumer, messageId, settled, undefined as T, opts);
      }
    }
    try {
      const result = await retryWithJitter(() => this.processOnce(delivery), {
        ...CLAIM_RETRY,
        retryable: (e) => e instanceof ClaimFailed && this.store.isRetryable(e.reason),
        exhausted: (_, attempts) =>
          this.logger.warn(CLAIM_RETRIES_EXHAUSTED(consumer, messageId, attempts)),
      });
      this.redeliveries.observe(consumer, result.duplicate);
      return result;
    } catch (e) {
      throw e instanceof ClaimFailed ? e.reason : e;
    }
  }

  /** The inbox record of a message, or undefined when there is none. */
  find(consumer: string, messageId: string): Promise<InboxRow | undefined> {
    return this.store.find(consumer, messageId);
  }

  /**
   * Deletes the inbox record of a message (an operator lets a message recorded as failed run
   * again on its next delivery). Returns whether a record was deleted.
   */
  async reset(consumer: string, messageId: string): Promise<boolean> {
    return (await this.store.remove(consumer, messageId)) > 0;
  }

  /**
   * The delay before a message whose attempt failed with `error` (thrown by `process()`) runs
   * again: the inbox's backoff for the failed attempts counted so far, or for a first failure
   * when none was counted (the database failed rather than the message). @internal
   */
  retryDelayMs(error: unknown, options: InboxProcessOptions = {}): number {
    const opts = { ...this.options.inbox, ...stripUndefined(options) };
    const counted =
      error !== null && typeof error === 'object' ? this.failedAttempts.get(error) : undefined;
    return inboxRetryDelayMs(counted ?? 1, opts);
  }

  /**
   * A redelivery-heavy consumer (most recent deliveries were already settled): one read outside
   * any transaction. A committed record that settled the message (processed, or failed after
   * maxAttempts) answers at once; anything else (no record, one being retried, a failed read)
   * goes on to the claim, which decides. A settled record is final, so a read that is a moment
   * old cannot let a handler run twice; only the claim lets one run.
   */
  private async lookUpSettled(
    consumer: string,
    messageId: string,
  ): Promise<InboxClaim | undefined> {
    let row: InboxRow | undefined;
    try {
      row = await this.find(consumer, messageId);
    } catch {
      return undefined;
    }
    if (!row || (row.status !== 'processed' && row.status !== 'failed')) return undefined;
    return settledClaim(row);
  }

  /** One attempt in a new transaction: claim, run, commit; a failure is counted afterwards. */
  private async processOnce<T>(delivery: InboxDelivery<T>): Promise<InboxResult<T>> {
    const { consumer, messageId, handler, opts } = delivery;
    let started = false;
    let connectionLost = false;
    let outcome: { claim: InboxClaim; result?: T };
    try {
      outcome = await this.db.inTransaction(async () => {
        let claim: InboxClaim;
        try {
          claim = await this.claim(consumer, messageId);
        } catch (e) {
          throw new ClaimFailed(e);
        }
        if (claim.outcome !== 'claimed') return { claim };
        started = true;
        const runner = this.db.txHost.tx.queryRunner;
        const watch = this.db.strayWrites.watch(opts.strayWrites, runner, `consumer ${consumer}`);
        try {
          const result = await handler();
          // A write that escaped the transaction under strayWrites 'error' fails the attempt.
          this.db.strayWrites.end(watch);
          return { claim, result };
        } catch (e) {
          // The handler failed because the database did: TypeORM releases a transaction's query
          // runner when its connection reports an error (PostgreSQL, MySQL); on SQL Server it
          // leaves the runner and only the error says so (found with KILL on Babelfish).
          connectionLost = !!runner?.isReleased || isDatabaseConnectionLost(e);
          throw e;
        }
      });
    } catch (e) {
      if (!started) throw e instanceof ClaimFailed ? e : new ClaimFailed(e);
      if (connectionLost || e instanceof QueryRunnerAlreadyReleasedError) {
        // Not the message's fault: counting it would let a database outage use up maxAttempts
        // and record a good message as failed (acknowledged, never handled).
        this.logger.warn(CONNECTION_LOST(consumer, messageId));
        throw e;
      }
      return this.afterFailure(consumer, messageId, e, opts);
    }
    return this.settle(consumer, messageId, outcome.claim, outcome.result as T, opts);
  }

  /** Inside the caller's transaction: claim and run; errors go to the caller's transaction. */
  private async processJoined<T>(delivery: InboxDelivery<T>): Promise<InboxResult<T>> {
    const { consumer, messageId, handler, opts } = delivery;
    const claim = await this.claim(consumer, messageId);
    if (claim.outcome !== 'claimed') {
      return this.settle(consumer, messageId, claim, undefined as T, opts);
    }
    const result = await handler();
    return this.settle(consumer, messageId, claim, result, opts);
  }

  private async claim(consumer: string, messageId: string): Promise<InboxClaim> {
    let claim = await this.store.claim(consumer, messageId);
    for (let i = 0; claim.outcome === 'again' && i < CLAIM_AGAIN; i++) {
      claim = await this.store.claim(consumer, messageId);
    }
    return claim;
  }

  private async settle<T>(
    consumer: string,
    messageId: string,
    claim: InboxClaim,
    result: T,
    opts: Required<InboxOptions>,
  ): Promise<InboxResult<T>> {
    const attrs = { consumer };
    switch (claim.outcome) {
      case 'claimed':
        this.metrics.inboxProcessed.add(1, attrs);
        this.emit('processed', consumer, messageId, claim.attempts);
        return { status: 'processed', duplicate: false, result, attempts: claim.attempts };
      case 'processed':
        this.metrics.inboxDuplicates.add(1, attrs);
        this.emit('duplicate', consumer, messageId, claim.attempts);
        return { status: 'duplicate', duplicate: true, attempts: claim.attempts };
      case 'failed': {
        this.metrics.inboxDuplicates.add(1, attrs);
        this.emit('duplicate', consumer, messageId, claim.attempts);
        if (opts.onMaxAttempts === 'ack') {
          return { status: 'failed', duplicate: true, attempts: claim.attempts };
        }
        const row = await this.find(consumer, messageId).catch(() => undefined);
        throw new InboxMessageFailedError(
          consumer,
          messageId,
          claim.attempts,
          row?.lastError ?? null,
        );
      }
      default:
        throw new Error(`inbox claim of ${messageId} did not settle`);
    }
  }

  /** The handler's transaction rolled back: count the attempt in its own transaction. */
  private async afterFailure<T>(
    consumer: string,
    messageId: string,
    error: unknown,
    opts: Required<InboxOptions>,
  ): Promise<InboxResult<T>> {
    let count;
    try {
      // A deadlock victim or a serialization failure: the count is run again, else a lost
      // count would let a failing message be retried past maxAttempts.
      count = await retryWithJitter(
        () => this.store.recordFailure(consumer, messageId, describe(error), opts.maxAttempts),
        { ...CLAIM_RETRY, retryable: (e) => this.store.isRetryable(e) },
      );
    } catch (recordError) {
      this.logger.error(FAILURE_NOT_RECORDED(consumer, messageId), (recordError as Error)?.stack);
      throw error;
    }
    if (count.status === 'processed') {
      // Another delivery of the same message committed meanwhile: nothing is left to do.
      this.metrics.inboxDuplicates.add(1, { consumer });
      this.emit('duplicate', consumer, messageId, count.attempts);
      return { status: 'duplicate', duplicate: true, attempts: count.attempts };
    }
    if (count.status !== 'failed') {
      if (error !== null && typeof error === 'object') {
        this.failedAttempts.set(error, count.attempts);
      }
      throw error;
    }
    this.metrics.inboxFailed.add(1, { consumer });
    this.logger.error(GAVE_UP(consumer, messageId, count.attempts), (error as Error)?.stack);
    this.emit('failed', consumer, messageId, count.attempts, describe(error));
    if (opts.onMaxAttempts === 'rethrow') throw error;
    return { status: 'failed', duplicate: false, attempts: count.attempts, error };
  }

  /** Tells the library's events what became of a message (nothing is built when nobody listens). */
  private emit(
    kind: InboxEvent['kind'],
    consumer: string,
    messageId: string,
    attempts: number,
    error?: string,
  ): void {
    if (!this.events.observed('inbox')) return;
    const event: InboxEvent = { type: `inbox.${kind}`, kind, consumer, messageId, attempts };
    if (error !== undefined) event.error = error;
    this.events.emit(event);
  }

  private validate(consumer: string, messageId: string): void {
    if (
      typeof consumer !== 'string' ||
      consumer.length === 0 ||
      consumer.length > MAX_CONSUMER_LENGTH
    ) {
      throw new TypeError(CONSUMER_INVALID(MAX_CONSUMER_LENGTH));
    }
    if (
      typeof messageId !== 'string' ||
      messageId.length === 0 ||
      messageId.length > MAX_MESSAGE_ID_LENGTH
    ) {
      throw new TypeError(MESSAGE_ID_INVALID(consumer, MAX_MESSAGE_ID_LENGTH));
    }
  }

  private static checkOptions(o: Required<InboxOptions>): Required<InboxOptions> {
    if (!Number.isInteger(o.maxAttempts) || o.maxAttempts < 1) {
      throw new TypeError(MAX_ATTEMPTS_INVALID(o.maxAttempts));
    }
    if (o.onMaxAttempts !== 'ack' && o.onMaxAttempts !== 'rethrow') {
      throw new TypeError(ON_MAX_ATTEMPTS_INVALID(o.onMaxAttempts));
    }
    if (o.strayWrites !== 'error' && o.strayWrites !== 'warn' && o.strayWrites !== 'ignore') {
      throw new TypeError(STRAY_WRITES_INVALID(o.strayWrites));
    }
    const backoff = inboxBackoffProblem(o);
    if (backoff) throw new TypeError(backoff);
    return o;
  }
}

function describe(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > MAX_ERROR_LENGTH ? text.slice(0, MAX_ERROR_LENGTH) : text;
}
