import { Inject, Injectable, Optional } from '@nestjs/common';
import { ExactlyOnceEvents } from '../events/exactly-once.events';
import { ClsServiceManager } from 'nestjs-cls';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type {
  IdempotencyContextType,
  IdempotencyEvent,
  ResolvedEndpointOptions,
  ResolvedIdempotencyOptions,
} from '../idempotency.options';
import { LibraryLogger, type LibraryLogLevel } from '../observability/library-logger';
import { MetricsService } from '../observability/metrics.service';
import { isMisconfiguration } from '../persistence/database-misconfigured';
import { DatabaseService } from '../persistence/database.service';
import {
  IdempotencyLedger,
  type LedgerDecision,
  type LedgerRequest,
  type SettledDecision,
} from '../persistence/idempotency-ledger';
import { toRetryAfterSeconds } from '../persistence/time';
import {
  misconfigured,
  PROBLEM_TYPES,
  type ProblemException,
  serviceUnavailable,
} from '../problem-details';
import { errorText, unreplayableAnswer } from './gate-answers';
import { IDEMPOTENCY_INFO, idempotencyInfo, type IdempotencyInfo } from './idempotency-context';
import {
  inProgress,
  keyReused,
  leaseLost,
  notSnapshottable,
  responseTooLarge,
} from './idempotency.errors';
import { InFlightRegistry } from './in-flight.registry';
import { keepLeaseAlive } from './lease-keeper';
import { buildContextScope } from './request-scope';
import { decodeSnapshot, encodeSnapshot, sealingOf } from './response-snapshot';

/**
 * A guarded call from a context other than HTTP (a microservice request), as its adapter read it:
 * the key, the scope (which carries the context type), the fingerprint, the endpoint's options.
 * @internal
 */
export interface GuardedCall {
  context: Exclude<IdempotencyContextType, 'http'>;
  /** The pattern (RPC) the call addresses, for logs and `onEvent`. */
  subject: string;
  opts: ResolvedEndpointOptions;
  info: IdempotencyInfo;
  ledger: LedgerRequest;
  /** What `onEvent` is told as the request. */
  request: unknown;
  /**
   * An error the handler threw that is an answer to store and replay (GraphQL: a 4xx), as the
   * JSON the adapter rebuilds it from; undefined for an error that releases the key (the RPC
   * adapter stores none). The handler's writes roll back either way.
   */
  storableError?: (error: unknown) => StoredError | undefined;
}

/** What the ledger is asked for a guarded call or request: its key, scope, hash and options. */
export function ledgerRequestOf(
  opts: ResolvedEndpointOptions,
  scope: string,
  key: string,
  requestHash: Buffer,
): LedgerRequest {
  return {
    scope,
    key,
    requestHash,
    mode: opts.mode,
    ttlMs: opts.ttl,
    leaseMs: opts.leaseMs,
    retryAfterSeconds: opts.retryAfterSeconds,
  };
}

/** What a context's adapter reads of a call that has a key (see guardedCallOf). */
export interface ContextCallParts {
  context: GuardedCall['context'];
  /** The pattern (RPC) or response path (GraphQL) the call addresses. */
  subject: string;
  request: unknown;
  tenant: string;
  principal: string;
  requestHash: Buffer;
}

/**
 * The guarded call of a context other than HTTP, or undefined when there is no key (and none is
 * required): `read` runs only for a key. Its scope is `tenant|principal|<context>:<subject>`.
 * @internal
 */
export function guardedCallOf(
  opts: ResolvedEndpointOptions,
  key: string | undefined,
  read: () => ContextCallParts,
): GuardedCall | undefined {
  if (key === undefined) return undefined;
  const p = read();
  const scope = buildContextScope(p.tenant, p.principal, p.context, p.subject);
  return {
    context: p.context,
    subject: p.subject,
    opts,
    info: idempotencyInfo(key, scope),
    request: p.request,
    ledger: ledgerRequestOf(opts, scope, key, p.requestHash),
  };
}

/** A thrown answer to store: its status (4xx) and the JSON the adapter rebuilds it from. */
export interface StoredError {
  status: number;
  body: unknown;
}

/**
 * What became of a guarded call: its handler ran once and its reply committed with its writes
 * (`executed`), the stored reply of an earlier run (`replayed`), or a problem the adapter turns
 * into its own error shape (409 in progress, 422 reused, 503 database unavailable, …).
 * @internal
 */
export type CallOutcome =
  | { kind: 'executed'; value: unknown }
  | { kind: 'replayed'; value: unknown; status: number }
  | { kind: 'refused'; error: ProblemException };

/** The handler threw: its error goes back to the caller unchanged, after the rollback. */
class HandlerFailed {
  constructor(
    readonly error: unknown,
    /** The error as an answer to store (after the rollback), when the adapter says it is one. */
    readonly stored?: StoredError,
  ) {}
}

/** The completion found the record no longer ours (lease taken over), or a committed record first. */
class Superseded {
  constructor(readonly raced: boolean) {}
}

/** A reply that cannot be stored (not JSON, or over `maxResponseBytes`). */
class Unstorable {
  constructor(readonly error: ProblemException) {}
}

/**
 * The gate for every context but HTTP: the seam that an adapter (the RPC interceptor) calls with
 * a call it has read, and a handler to run. The ledger decides, as for HTTP (same port, same
 * decisions, same modes): in transactional mode the reservation, the handler's writes and the
 * stored reply commit in ONE transaction, so a crash frees the key at once and nothing runs twice;
 * in leased mode the reservation commits first and its lease is renewed while the handler runs.
 * Replies are stored as JSON (what every Nest transport sends), sealed under `encryptionKey`
 * like HTTP answers. A thrown error rolls everything back and frees the key (the next request
 * runs again); the adapter gets the error as thrown.
 * @internal
 */
@Injectable()
export class CallGate {
  private readonly registry: InFlightRegistry;
  private readonly logger: LibraryLogger;

  constructor(
    private readonly db: DatabaseService,
    private readonly ledger: IdempotencyLedger,
    private readonly metrics: MetricsService,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    @Optional() private readonly events: ExactlyOnceEvents = new ExactlyOnceEvents(options),
  ) {
    this.registry = new InFlightRegistry(() => ledger.singleWriter);
    this.logger = new LibraryLogger(options.logger, 'Idempotency');
  }

  /**
   * Runs `handler` at most once for the call's (scope, key), or answers from the ledger. Rejects
   * with the handler's own error when it threw (nothing was committed).
   */
  run(call: GuardedCall, handler: () => Promise<unknown>): Promise<CallOutcome> {
    const cls = ClsServiceManager.getClsService();
    const go = () => {
      cls.set(IDEMPOTENCY_INFO as any, call.info);
      return this.decide(call, handler);
    };
    return cls.isActive() ? go() : cls.run(go);
  }

  private async decide(call: GuardedCall, handler: () => Promise<unknown>): Promise<CallOutcome> {
    const { scope, key } = call.info;
    const { inProgress: policy } = call.opts;
    const waitUntil = Date.now() + policy.maxWaitMs;
    for (;;) {
      const outcome = this.registry.has(scope, key)
        ? this.inFlightHere(call)
        : call.opts.mode === 'transactional'
          ? await this.transactional(call, handler)
          : await this.leased(call, handler);
      const inFlight =
        outcome.kind === 'refused' && outcome.error.problem.type === PROBLEM_TYPES.inProgress;
      if (!inFlight || policy.policy !== 'wait' || Date.now() >= waitUntil) return outcome;
      await new Promise((r) => setTimeout(r, policy.pollIntervalMs));
    }
  }

  /** SQLite: the same key is in flight in this process (see InFlightRegistry). */
  private inFlightHere(call: GuardedCall): CallOutcome {
    const leaseLeft = this.registry.leaseRemainingMs(call.info.scope, call.info.key);
    const max = call.opts.retryAfterSeconds;
    return this.settled(call, {
      kind: 'in-progress',
      retryAfterSeconds:
        leaseLeft === undefined ? max : Math.min(toRetryAfterSeconds(leaseLeft), max),
    });
  }

  private async transactional(
    call: GuardedCall,
    handler: () => Promise<unknown>,
  ): Promise<CallOutcome> {
    let settled: SettledDecision | undefined;
    try {
      settled = await this.ledger.settleBeforeTransaction(call.ledger, call.opts);
    } catch (e) {
      return this.failed(call, e);
    }
    if (settled) return this.settled(call, settled);
    let decision: LedgerDecision | undefined;
    let value: unknown;
    let ticket: symbol | undefined;
    try {
      await this.db.inGateTransaction(async () => {
        decision = await this.ledger.reserve(call.ledger);
        if (decision.kind !== 'reserved') return;
        this.reserved(call, decision);
        ticket = this.registry.enter(call.info.scope, call.info.key);
        value = await this.runHandler(call, handler);
        const ok = await this.ledger.complete(decision.reservation, this.encode(call, value), {
          ttlMs: call.opts.ttl,
          sameTransaction: true,
        });
        if (!ok) throw new Superseded(decision.reservation.deferred !== undefined);
      });
    } catch (e) {
      // A replay or conflict wrote nothing: if only the end of its transaction failed, it stands.
      if (!decision || decision.kind === 'reserved') return this.failed(call, e);
    } finally {
      this.registry.leave(call.info.scope, call.info.key, ticket);
    }
    if (!decision) return this.failed(call, new Error('no decision'));
    this.ledger.observe(call.opts, decision.kind === 'replay');
    if (decision.kind !== 'reserved') return this.settled(call, decision);
    return this.executed(call, value);
  }

  private async leased(call: GuardedCall, handler: () => Promise<unknown>): Promise<CallOutcome> {
    let decision: LedgerDecision | undefined;
    try {
      await this.db.withoutTransaction(async () => {
        decision = await this.ledger.reserve(call.ledger);
      });
    } catch (e) {
      if (!decision || decision.kind === 'reserved') return this.failed(call, e);
    }
    if (!decision) return this.failed(call, new Error('no decision'));
    if (decision.kind !== 'reserved') return this.settled(call, decision);
    this.reserved(call, decision);
    const { reservation } = decision;
    const { scope, key } = call.info;
    const ticket = this.registry.enter(scope, key);
    this.registry.setLease(scope, key, Date.now() + call.opts.leaseMs);
    const keeper = keepLeaseAlive(this.ledger, this.db, reservation, call.opts.leaseMs, (e) =>
      this.log('warn', 'lease-renewal-failed', call, { error: errorText(e) }),
    );
    let value: unknown;
    try {
      await this.db
        .inTransaction(async () => {
          value = await this.runHandler(call, handler);
          const ok = await this.ledger.complete(reservation, this.encode(call, value), {
            ttlMs: call.opts.ttl,
          });
          if (!ok) throw new Superseded(false);
        })
        .finally(() => keeper?.stop());
    } catch (e) {
      if (e instanceof HandlerFailed && e.stored) {
        // A thrown 4xx: its writes rolled back, the answer completes our reservation.
        const stored = e.stored;
        await this.db
          .withoutTransaction(() =>
            this.ledger.complete(reservation, this.encodeError(call, stored), {
              ttlMs: call.opts.ttl,
            }),
          )
          .catch((err) => this.log('warn', 'store-4xx-failed', call, { error: errorText(err) }));
        throw e.error;
      }
      if (!(e instanceof Superseded)) {
        await this.ledger
          .release(reservation)
          .catch((err) => this.log('warn', 'release-failed', call, { error: errorText(err) }));
      }
      return this.failed(call, e);
    } finally {
      this.registry.leave(scope, key, ticket);
    }
    return this.executed(call, value);
  }

  private async runHandler(call: GuardedCall, handler: () => Promise<unknown>): Promise<unknown> {
    // strayWrites: a write outside this transaction while the handler runs is refused or logged.
    const watch = this.db.strayWrites.watch(
      call.opts.strayWrites,
      this.db.manager.queryRunner,
      `${call.context} ${call.subject}`,
    );
    let value: unknown;
    try {
      value = await handler();
    } catch (e) {
      throw new HandlerFailed(e, call.storableError?.(e));
    }
    this.db.strayWrites.end(watch);
    return value;
  }

  /** The reply as stored: JSON bytes (status 200), or no body (204) for `undefined`. */
  private encode(call: GuardedCall, value: unknown) {
    let body: Buffer | null = null;
    if (value !== undefined) {
      let json: string | undefined;
      try {
        json = JSON.stringify(value);
      } catch (e) {
        throw new Unstorable(notSnapshottable(`a reply that is not JSON (${errorText(e)})`));
      }
      if (json === undefined) throw new Unstorable(notSnapshottable('a reply that is not JSON'));
      body = Buffer.from(json);
      if (body.length > call.opts.maxResponseBytes) {
        throw new Unstorable(responseTooLarge(body.length, call.opts.maxResponseBytes));
      }
    }
    const status = body ? 200 : 204;
    const encoded = encodeSnapshot(
      { status, headers: [], body },
      sealingOf(this.options.encryption, call.ledger),
    );
    return { status, headers: encoded.headers, body: encoded.body };
  }

  /** A thrown 4xx as stored: its status and its JSON. */
  private encodeError(call: GuardedCall, stored: StoredError) {
    const body = Buffer.from(JSON.stringify(stored.body ?? null));
    const encoded = encodeSnapshot(
      { status: stored.status, headers: [], body },
      sealingOf(this.options.encryption, call.ledger),
    );
    return { status: stored.status, headers: encoded.headers, body: encoded.body };
  }

  /**
   * Transactional mode: a thrown 4xx is stored after its transaction rolled back (the reservation
   * went with it), by reserving the key again in a short transaction of its own and completing it
   * there. A key meanwhile taken by another attempt keeps that attempt's record; a failure to
   * store leaves the key free (a retry runs again).
   */
  private async storeErrorAfterRollback(call: GuardedCall, stored: StoredError): Promise<void> {
    try {
      await this.db.inTransaction(async () => {
        const again = await this.ledger.reserve(call.ledger);
        if (again.kind !== 'reserved') return;
        const answer = this.encodeError(call, stored);
        if (!(await this.ledger.complete(again.reservation, answer, { ttlMs: call.opts.ttl }))) {
          throw new Error('reserved record vanished');
        }
      });
    } catch (e) {
      this.log('warn', 'store-4xx-failed', call, { error: errorText(e) });
    }
  }

  private reserved(call: GuardedCall, d: Extract<LedgerDecision, { kind: 'reserved' }>): void {
    this.metrics.idempotencyStarted.add(1);
    if (d.takenOver === 'lease-lapsed') this.log('warn', 'lease-takeover', call);
    this.log('debug', 'reserved', call);
  }

  private executed(call: GuardedCall, value: unknown): CallOutcome {
    this.emit(call, 'created', 200);
    // What the caller gets is what a replay will give: the reply as JSON.
    return {
      kind: 'executed',
      value: value === undefined ? undefined : JSON.parse(JSON.stringify(value)),
    };
  }

  /** The outcome of a decision other than `reserved`. */
  private settled(call: GuardedCall, d: SettledDecision): CallOutcome {
    switch (d.kind) {
      case 'in-progress':
        this.metrics.idempotencyInProgressConflicts.add(1);
        this.log('debug', 'in-progress', call);
        this.emit(call, 'conflict', 409);
        return { kind: 'refused', error: inProgress(d.retryAfterSeconds) };
      case 'mismatch':
        this.metrics.idempotencyMismatchConflicts.add(1);
        this.log('warn', 'key-reused-with-other-request', call);
        this.emit(call, 'mismatch', call.opts.mismatchStatus);
        return {
          kind: 'refused',
          error: keyReused(
            call.opts.mismatchStatus,
            call.context === 'graphql' ? 'field or arguments' : 'pattern or payload',
          ),
        };
      case 'replay': {
        let value: unknown;
        try {
          const s = decodeSnapshot(
            d.answer.status,
            d.answer.headers,
            d.answer.body,
            sealingOf(this.options.encryption, call.ledger),
          );
          value = s.body && s.body.length > 0 ? JSON.parse(s.body.toString('utf8')) : undefined;
        } catch (e) {
          // Never run again, never replayed: the same answers as for HTTP (a key id no longer
          // in the ring, plaintext while keys are set, an unreadable answer).
          const u = unreplayableAnswer(e);
          this.log('error', u.event, call, u.fields);
          return { kind: 'refused', error: u.error };
        }
        this.metrics.idempotencyReplayed.add(1);
        this.log('debug', 'replay', call);
        this.emit(call, 'replayed', d.answer.status);
        return { kind: 'replayed', value, status: d.answer.status };
      }
    }
  }

  /** After the transaction threw: the handler's error, or what the failure means for the caller. */
  private async failed(call: GuardedCall, e: unknown): Promise<CallOutcome> {
    if (e instanceof HandlerFailed) {
      if (e.stored && call.opts.mode === 'transactional') {
        await this.storeErrorAfterRollback(call, e.stored);
      }
      throw e.error;
    }
    if (e instanceof Unstorable) return { kind: 'refused', error: e.error };
    if (e instanceof Superseded) {
      if (!e.raced) {
        this.metrics.idempotencyCompleteFailures.add(1);
        this.log('warn', 'lease-lost', call);
        return { kind: 'refused', error: leaseLost() };
      }
      // Single write: a committed record of this key got there first. Answer what holds it.
      this.log('warn', 'raced-committed-record', call);
      const holder = await this.ledger.lookUpCompleted(call.ledger);
      return this.settled(
        call,
        holder ?? { kind: 'in-progress', retryAfterSeconds: call.opts.retryAfterSeconds },
      );
    }
    this.metrics.idempotencyCompleteFailures.add(1);
    this.log('error', 'transaction-failed', call, { error: errorText(e) });
    return {
      kind: 'refused',
      error: isMisconfiguration(e)
        ? misconfigured()
        : serviceUnavailable(
            'The request could not be completed because the database is unavailable. Retry with the same Idempotency-Key.',
          ),
    };
  }

  private emit(call: GuardedCall, kind: IdempotencyEvent['kind'], status: number): void {
    const where = { keyHash: call.info.keyHash, path: call.subject, request: call.request };
    this.events.emitGate(
      call.opts,
      kind,
      status,
      { ...where, method: call.context.toUpperCase() },
      (error) => this.log('warn', 'on-event-failed', call, { error }),
    );
  }

  private log(level: LibraryLogLevel, event: string, call: GuardedCall, extra: object = {}): void {
    this.logger.event(level, `idempotency.${event}`, () => ({
      keyHash: call.info.keyHash,
      mode: call.opts.mode,
      context: call.context,
      subject: call.subject,
      ...extra,
    }));
  }
}
