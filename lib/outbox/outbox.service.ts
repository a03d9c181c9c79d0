import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type EntityManager, QueryRunnerAlreadyReleasedError } from 'typeorm';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { traceOutboxAdd } from '../observability/outbox.tracing';
import { DatabaseService } from '../persistence/database.service';
import type { OutboxInsert } from '../persistence/dialects';
import { afterCommit } from '../persistence/after-commit.hook';
import { OUTBOX_HEADERS, OUTBOX_LIMITS } from './outbox.constants';
import {
  InvalidOutboxEventError,
  OutboxRouteError,
  OutboxTransactionRequiredError,
} from './outbox.errors';
import { DUPLICATE_ID, INVALID_EVENT, ROUTE_THREW, UNKNOWN_ROUTE } from './outbox.messages';
import { outboxRouting, type OutboxRouting } from './outbox-routing.options';
import type { OutboxEvent } from './outbox-message.interface';
import { keyLockSlots } from './outbox-ordering';
import { OutboxWakeSignal } from './outbox-wake.signal';
import { OutboxStore } from './outbox.store';

const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;
const RESERVED_HEADERS = new Set<string>(Object.values(OUTBOX_HEADERS));

/**
 * Writes events to the transactional outbox, in the same transaction as the business data:
 * they are published (by the relay) exactly when that transaction commits, never when it rolls
 * back. Inject it in domain services:
 *
 * ```ts
 * await this.outbox.add({ type: 'payment.captured', partitionKey: payment.id, payload: { paymentId: payment.id } });
 * ```
 */
@Injectable()
export class OutboxService {
  /** The configured publishers' names and the route function. */
  private readonly routing: OutboxRouting = outboxRouting(this.options.outbox);

  constructor(
    private readonly db: DatabaseService,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly signal: OutboxWakeSignal,
    private readonly store: OutboxStore,
  ) {}

  /**
   * Adds one or many events to the outbox in the ambient transaction (`TransactionHost.tx`), or
   * in the transaction of the given EntityManager (apps without nestjs-cls). Validates every
   * event first: an invalid one throws `InvalidOutboxEventError` and nothing is written. With no
   * transaction it throws `OutboxTransactionRequiredError` (unless `outbox.requireTransaction`
   * is false). When the transaction commits, the relay of this process is woken at once.
   * The active trace context (W3C `traceparent`, `tracestate`, `baggage`, through the app's
   * OpenTelemetry propagator) is stored in each message's headers; nothing without an SDK.
   * Returns the message ids, in order.
   *
   * With `outbox.ordered` (the default), in a transaction, messages with a partition key are
   * inserted right before the transaction commits, after locking their keys until the COMMIT:
   * each key's messages are published in the order their transactions COMMITTED (see
   * docs/outbox.md). A transaction that commits while another one of the same key is in that
   * last step waits for it (milliseconds); an open transaction holds nobody up. A duplicate id
   * among those messages fails the commit (the transaction rolls back) rather than this call.
   */
  async add(
    events: OutboxEvent | readonly OutboxEvent[],
    manager?: EntityManager,
  ): Promise<string[]> {
    const list: readonly OutboxEvent[] = Array.isArray(events) ? events : [events as OutboxEvent];
    const rows = this.toRows(list);
    if (!rows.length) return [];
    const target = manager ?? this.ambientManager();
    const runner = target.queryRunner;
    // The transaction's connection was lost (TypeORM released its runner): a database failure,
    // not a missing transaction; the statement must not run anywhere else either.
    if (runner?.isReleased) throw new QueryRunnerAlreadyReleasedError();
    const inTransaction = !!runner && runner.isTransactionActive;
    if (!inTransaction && this.options.outbox.requireTransaction) {
      throw new OutboxTransactionRequiredError(!!manager);
    }
    // The trace context of the request goes into each message's headers (see outbox.tracing.ts).
    const traced = traceOutboxAdd(rows);
    // Ordered (the default), in a transaction: keyed rows are inserted right before its COMMIT,
    // under their keys' locks, so that a key's sequence follows commit order (outbox-ordering.ts).
    const deferred =
      inTransaction && this.options.outbox.ordered && !this.db.dialect.singleWriter
        ? rows.filter((r) => r.partitionKey !== null)
        : [];
    const now = deferred.length ? rows.filter((r) => r.partitionKey === null) : rows;
    try {
      if (now.length) await this.store.insert(target, now);
    } catch (e) {
      traced.end(e);
      throw e;
    }
    traced.end();
    if (deferred.length) {
      this.db.beforeCommit(runner!, this.insertOrdered, { target, rows: deferred });
    }
    if (this.options.outbox.wakeOnCommit) {
      if (inTransaction) afterCommit(runner!, () => this.signal.notify());
      else this.signal.notify();
    }
    return rows.map((r) => r.id);
  }

  /**
   * The before-commit step of an ordered transaction: every keyed row its add() calls deferred,
   * inserted after their keys' slots are locked (until the COMMIT right after).
   */
  private readonly insertOrdered = async (
    batches: Array<{ target: EntityManager; rows: OutboxInsert[] }>,
  ): Promise<void> => {
    const rows = batches.flatMap((b) => b.rows);
    const slots = keyLockSlots(rows.map((r) => r.partitionKey!));
    await this.store.insertOrdered(batches[0].target, slots, rows);
  };

  /** The ambient transaction's manager (or the DataSource's, outside one). */
  private ambientManager(): EntityManager {
    try {
      return this.db.txHost.tx;
    } catch {
      // nestjs-cls is not set up: only an explicit EntityManager can be used.
      if (this.options.outbox.requireTransaction) throw new OutboxTransactionRequiredError();
      return this.db.dataSource.manager;
    }
  }

  /**
   * The publisher an event goes to: `outbox.route(event)` when set (it must name a configured
   * publisher), else the only publisher. Stored with the message, never resolved again.
   */
  private routeOf(event: OutboxEvent, index: number): string {
    const { route, names, fixed } = this.routing;
    if (!route) return fixed;
    let name: unknown;
    try {
      name = route(event);
    } catch (e) {
      throw new OutboxRouteError(ROUTE_THREW(index, (e as Error)?.message ?? String(e)), undefined);
    }
    if (typeof name !== 'string' || !names.has(name)) {
      throw new OutboxRouteError(UNKNOWN_ROUTE(index, name, [...names]), name);
    }
    return name;
  }

  /** Validates and serializes the events (all of them before anything is written). */
  protected toRows(events: readonly OutboxEvent[]): OutboxInsert[] {
    const ids = new Set<string>();
    return events.map((event, index) => {
      const fail = (reason: string): never => {
        throw new InvalidOutboxEventError(INVALID_EVENT(index, reason), index, reason);
      };
      if (!event || typeof event !== 'object') fail('not an object');
      const { type, id, partitionKey, headers, delay, availableAt } = event;
      if (
        typeof type !== 'string' ||
        !PRINTABLE_ASCII.test(type) ||
        type.length > OUTBOX_LIMITS.typeLength
      ) {
        fail(
          `type must be printable ASCII without spaces, 1..${OUTBOX_LIMITS.typeLength} characters`,
        );
      }
      const messageId = id ?? randomUUID();
      if (
        typeof messageId !== 'string' ||
        !PRINTABLE_ASCII.test(messageId) ||
        messageId.length > OUTBOX_LIMITS.idLength
      ) {
        fail(`id must be printable ASCII without spaces, 1..${OUTBOX_LIMITS.idLength} characters`);
      }
      if (ids.has(messageId)) fail(DUPLICATE_ID(messageId));
      ids.add(messageId);
      if (partitionKey !== undefined && partitionKey !== null) {
        if (
          typeof partitionKey !== 'string' ||
          partitionKey.length === 0 ||
          partitionKey.length > OUTBOX_LIMITS.partitionKeyLength
        ) {
          fail(
            `partitionKey must be a string of 1..${OUTBOX_LIMITS.partitionKeyLength} characters`,
          );
        }
      }
      let headersJson: string | null = null;
      if (headers !== undefined && headers !== null) {
        if (typeof headers !== 'object' || Array.isArray(headers)) {
          fail('headers must be an object of string values');
        }
        for (const [name, value] of Object.entries(headers)) {
          if (!PRINTABLE_ASCII.test(name) || name.length > OUTBOX_LIMITS.headerNameLength) {
            fail(`header name "${name}" is not printable ASCII`);
          }
          if (RESERVED_HEADERS.has(name.toLowerCase())) {
            fail(`header "${name}" is set by the relay`);
          }
          if (typeof value !== 'string') fail(`header "${name}" must be a string`);
        }
        headersJson = JSON.stringify(headers);
      }
      let payload: string | undefined;
      try {
        payload = JSON.stringify(event.payload);
      } catch (e) {
        fail(`payload is not JSON-serializable (${(e as Error).message})`);
      }
      if (typeof payload !== 'string') fail('payload is missing or not JSON-serializable');
      let delayMs = 0;
      if (
        delay !== undefined &&
        delay !== null &&
        availableAt !== undefined &&
        availableAt !== null
      ) {
        fail('give delay or availableAt, not both');
      }
      if (delay !== undefined && delay !== null) {
        if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) {
          fail('delay must be a number of milliseconds, 0 or more');
        }
        delayMs = delay;
      } else if (availableAt !== undefined && availableAt !== null) {
        if (!(availableAt instanceof Date) || Number.isNaN(availableAt.getTime())) {
          fail('availableAt must be a valid Date');
        }
        // Read on this process's clock; the database holds it as a delay on its own clock.
        delayMs = Math.max(0, availableAt.getTime() - Date.now());
      }
      if (delayMs > OUTBOX_LIMITS.maxDelayMs) {
        fail(`delay must be at most ${OUTBOX_LIMITS.maxDelayMs} ms (366 days)`);
      }
      return {
        id: messageId,
        type,
        payload: payload!,
        headers: headersJson,
        partitionKey: partitionKey ?? null,
        delayMs: Math.floor(delayMs),
        route: this.routeOf(event, index),
      };
    });
  }
}
