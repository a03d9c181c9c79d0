import {
  CallHandler,
  ExecutionContext,
  Inject,
  Injectable,
  Logger,
  LoggerService,
  NestInterceptor,
  StreamableFile,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ClsServiceManager } from 'nestjs-cls';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Observable, Subscriber } from 'rxjs';
import { IDEMPOTENCY_OPTIONS, IDEMPOTENT_METADATA } from '../idempotency.constants';
import type {
  IdempotencyEndpointOptions,
  ResolvedEndpointOptions,
  ResolvedIdempotencyOptions,
} from '../idempotency.options';
import { resolveEndpointOptions } from '../idempotency.options';
import { MetricsService } from '../maintenance/metrics.service';
import { DatabaseService } from '../persistence/database.service';
import type { IdempotencyRow, ReserveParams } from '../persistence/dialects';
import { IdempotencyStore } from '../persistence/idempotency.store';
import { toRetryAfterSeconds } from '../persistence/time';
import {
  gateAfterCommit,
  gateAfterReservationCommit,
  publishGate,
} from '../diagnostics/diagnostics.channels';
import { IDEMPOTENCY_INFO, IdempotencyInfo, keyHashOf } from './idempotency-context';
import {
  problemAnswer,
  replayAnswer,
  ReplayResponse,
  sendProblem,
} from './idempotency-exception.filter';
import {
  inProgress,
  invalidKey,
  keyReused,
  leaseLost,
  missingKey,
  notSnapshottable,
  ProblemException,
  responseTooLarge,
  serviceUnavailable,
  storedResponseUnreadable,
} from './idempotency.errors';
import { parseIdempotencyKey } from './idempotency-key.parser';
import { CAPTURE_TIMEOUT } from './idempotency.messages';
import { trackHandlerBody } from './handler-body.tracker';
import {
  headerValue,
  headerValues,
  queryString,
  rawResponse,
  routeTemplate,
} from './http-platform';
import { requestFingerprint } from './request-fingerprint';
import { buildScope } from './request-scope';
import { LeaseKeeper } from './lease-keeper';
import { ReadFirstPolicy } from '../persistence/read-first.policy';
import { CapturedResponse, ResponseCapture } from './response-capture';
import {
  decodeSnapshot,
  encodeSnapshot,
  ResponseSnapshot,
  storableHeaders,
} from './response-snapshot';

/** One guarded request, as the gate sees it. */
interface GuardedRequest {
  opts: ResolvedEndpointOptions;
  info: IdempotencyInfo;
  requestHash: Buffer;
  res: any;
  /** SQLite: this request's registration in the in-process in-flight registry. */
  inFlightTicket?: symbol;
}

/** How the reservation step ended. */
type Reservation =
  | { kind: 'reserved'; id: string; token: string }
  | { kind: 'replay'; snapshot: ResponseSnapshot }
  | { kind: 'conflict'; error: ProblemException };

/**
 * Thrown inside the transaction to roll it back; `after` runs once the rollback is done
 * (send the captured answer, a problem, or store a 4xx). In leased mode the reservation is
 * released unless `keepReservation` says the answer completes it (4xx) or it is no longer ours.
 */
class Abort extends Error {
  constructor(
    readonly after: () => Promise<void> | void,
    readonly keepReservation = false,
  ) {
    super('rolled back');
  }
}

const CAPTURE_TIMEOUT_MS = 30_000;

/**
 * The HTTP idempotency gate. For each guarded request: parse the key, fingerprint the request,
 * reserve (scope, key) atomically in the ledger, run the handler once inside the ambient
 * transaction, capture the response the framework writes, store it in the same transaction,
 * and only after the commit let the bytes go to the client. Retries replay the stored answer.
 * Protected hooks can be overridden by subclassing.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger: LoggerService | undefined;
  private readonly endpointOptions = new WeakMap<object, ResolvedEndpointOptions>();
  /**
   * Lease deadlines of the leased-mode requests in flight in this process. On SQLite every
   * statement waits for the transaction in progress, so a duplicate caught by the in-process
   * in-flight registry cannot read the record: its Retry-After comes from here.
   */
  private readonly localLeases = new Map<string, number>();
  /** Transactional mode: when a replay-heavy endpoint reads the key first (see the policy). */
  private readonly replayLookup = new ReadFirstPolicy();

  constructor(
    private readonly reflector: Reflector,
    private readonly db: DatabaseService,
    private readonly store: IdempotencyStore,
    private readonly metrics: MetricsService,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {
    this.logger =
      options.logger === false ? undefined : (options.logger ?? new Logger('Idempotency'));
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const opts = this.resolveOptions(context);
    const http = context.switchToHttp();
    const req = http.getRequest();
    const res = http.getResponse();

    const values = headerValues(req, opts.headerName);
    if (values.length === 0) {
      if (!opts.required) return next.handle();
      throw missingKey(opts.headerName);
    }
    if (values.length > 1)
      throw invalidKey(`the ${opts.headerName} header appears ${values.length} times`);
    const key = parseIdempotencyKey(values[0].trim(), opts.maxKeyLength);
    const route = routeTemplate(req, `${context.getClass().name}.${context.getHandler().name}`);
    const scope = buildScope(this.getTenant(req), this.getPrincipal(req), req.method, route);
    const requestHash = this.fingerprint(req, route, opts);
    const info: IdempotencyInfo = { key, scope, keyHash: keyHashOf(scope, key) };
    req[IDEMPOTENCY_INFO] = info;
    const guarded: GuardedRequest = { opts, info, requestHash, res };

    return new Observable((subscriber) => {
      const cls = ClsServiceManager.getClsService();
      const run = () => {
        if (cls.isActive()) cls.set(IDEMPOTENCY_INFO as any, info);
        this.execute(guarded, next, subscriber).catch((e) => subscriber.error(e));
      };
      if (cls.isActive()) run();
      else cls.run(run);
    });
  }

  /** Tenant of the request (override to read it elsewhere). */
  protected getTenant(req: any): string {
    return this.options.tenantResolver?.(req) ?? '-';
  }

  /** Principal of the request (override to read it elsewhere). */
  protected getPrincipal(req: any): string {
    return this.options.principalResolver?.(req) ?? '-';
  }

  /** The request fingerprint (override to change what makes two requests "the same"). */
  protected fingerprint(req: any, route: string, opts: ResolvedEndpointOptions): Buffer {
    return requestFingerprint({
      method: req.method,
      route,
      query: queryString(req),
      headers: opts.fingerprint.headers.map((h) => [h.toLowerCase(), headerValue(req, h)]),
      contentType: headerValue(req, 'content-type'),
      body: req.body,
      rawBody: req.rawBody,
      excludeBodyPaths: new Set(opts.fingerprint.excludeBodyPaths),
    });
  }

  private resolveOptions(context: ExecutionContext): ResolvedEndpointOptions {
    const handler = context.getHandler();
    let resolved = this.endpointOptions.get(handler);
    if (!resolved) {
      const overrides = this.reflector.getAllAndOverride<IdempotencyEndpointOptions | undefined>(
        IDEMPOTENT_METADATA,
        [handler, context.getClass()],
      );
      resolved = resolveEndpointOptions(this.options, overrides);
      this.endpointOptions.set(handler, resolved);
    }
    return resolved;
  }

  private async execute(
    g: GuardedRequest,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
  ): Promise<void> {
    const { info, opts } = g;
    const local = `${info.scope}\u0000${info.key}`;
    if (this.store.isInFlight(info.scope, info.key)) {
      // SQLite: the same key is in flight in this process.
      const leaseUntil = this.localLeases.get(local);
      const retryAfter =
        leaseUntil === undefined
          ? opts.retryAfterSeconds
          : toRetryAfterSeconds(leaseUntil - Date.now());
      const outcome = await this.waitOrConflict(g, this.conflict(g, inProgress(retryAfter)));
      if (outcome) return this.answer(outcome, g, subscriber);
      return this.execute(g, next, subscriber);
    }
    try {
      if (opts.mode === 'transactional') await this.runTransactional(g, next, subscriber);
      else await this.runLeased(g, next, subscriber);
    } finally {
      this.localLeases.delete(local);
      this.store.leave(info.scope, info.key, g.inFlightTicket);
    }
  }

  /** Reservation, handler and completion in ONE transaction; a crash rolls it all back. */
  private async runTransactional(
    g: GuardedRequest,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
  ): Promise<void> {
    if (this.db.dialect.nonBlockingReads && this.replayLookup.readFirst(g.opts)) {
      const settled = await this.lookUpCompleted(g);
      if (settled) {
        this.replayLookup.observe(g.opts, settled.kind === 'replay');
        return this.answer(settled, g, subscriber);
      }
    }
    let capture: ResponseCapture | undefined;
    let reservation: Reservation | undefined;
    try {
      await this.db.inNewTransaction(async () => {
        reservation = await this.reserve(g);
        if (reservation.kind !== 'reserved') return;
        g.inFlightTicket = this.store.markInFlight(g.info.scope, g.info.key);
        capture = new ResponseCapture(rawResponse(g.res));
        await this.runHandlerAndComplete(g, reservation, next, subscriber, capture);
      });
    } catch (e) {
      // A replay or conflict wrote nothing: if only the end of its transaction failed (Babelfish
      // rolls a transaction back itself after a lock time-out), the decision stands.
      if (!reservation || reservation.kind === 'reserved')
        return this.afterFailure(e, g, capture, subscriber);
    }
    if (!reservation) return;
    this.replayLookup.observe(g.opts, reservation.kind === 'replay');
    if (reservation.kind !== 'reserved') {
      const settled = await this.waitOrConflict(g, reservation);
      if (settled) return this.answer(settled, g, subscriber);
      return this.runTransactional(g, next, subscriber);
    }
    // Test-only crash point: the business transaction has committed, no byte has left yet.
    publishGate(gateAfterCommit, g.info);
    capture?.release();
  }

  /**
   * Transactional mode, replay-heavy endpoint: one read outside any transaction. A committed,
   * live, completed record answers at once (its replay, or 422 for another payload); anything
   * else (no record, an expired one, a failed read) goes on to the reservation, which decides.
   */
  private async lookUpCompleted(
    g: GuardedRequest,
  ): Promise<Exclude<Reservation, { kind: 'reserved' }> | undefined> {
    let row: IdempotencyRow | undefined;
    try {
      const started = Date.now();
      row = await this.db.withoutTransaction(() =>
        this.store.find(this.db.exec(), g.info.scope, g.info.key),
      );
      this.metrics.idempotencyStoreLatency.record(Date.now() - started, { op: 'lookup' });
    } catch {
      return undefined;
    }
    if (!row || row.state !== 'completed' || row.expired) return undefined;
    return this.settledAnswer(g, row, false);
  }

  /** Reservation committed first; handler and completion in a second transaction. */
  private async runLeased(
    g: GuardedRequest,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
  ): Promise<void> {
    let reservation: Reservation | undefined;
    try {
      // Autocommit: each reservation statement is atomic on its own (guarded insert, then a
      // compare-and-set take-over), so it needs no transaction of its own: a first execution
      // saves a BEGIN/COMMIT pair and a replay is a single statement.
      await this.db.withoutTransaction(async () => {
        reservation = await this.reserve(g);
      });
    } catch (e) {
      if (!reservation || reservation.kind === 'reserved')
        return this.afterFailure(e, g, undefined, subscriber);
    }
    if (!reservation) return;
    if (reservation.kind !== 'reserved') {
      const settled = await this.waitOrConflict(g, reservation);
      if (settled) return this.answer(settled, g, subscriber);
      return this.runLeased(g, next, subscriber);
    }
    const reserved = reservation;
    g.inFlightTicket = this.store.markInFlight(g.info.scope, g.info.key);
    // Test-only crash point: the reservation is committed, the handler has not run.
    publishGate(gateAfterReservationCommit, g.info);
    this.localLeases.set(`${g.info.scope}\u0000${g.info.key}`, Date.now() + g.opts.leaseMs);
    const capture = new ResponseCapture(rawResponse(g.res));
    const keeper = this.keepLeaseAlive(g, reserved);
    try {
      await this.db
        .inNewTransaction(() => this.runHandlerAndComplete(g, reserved, next, subscriber, capture))
        .finally(() => keeper?.stop());
    } catch (e) {
      if (!(e instanceof Abort) || !e.keepReservation) {
        await this.db
          .withoutTransaction(() => this.store.release(this.db.exec(), reserved.id, reserved.token))
          .catch((err) => this.log('warn', 'release-failed', g, { error: String(err) }));
      }
      return this.afterFailure(e, g, capture, subscriber);
    }
    // Test-only crash point: the business transaction has committed, no byte has left yet.
    publishGate(gateAfterCommit, g.info);
    capture.release();
  }

  /**
   * Leased mode: renews the committed reservation's lease while the handler runs (see
   * LeaseKeeper). Not on SQLite: one process, where the in-flight registry already answers every
   * duplicate, and where a statement outside the handler's transaction would wait for it.
   */
  private keepLeaseAlive(
    g: GuardedRequest,
    reserved: { id: string; token: string },
  ): LeaseKeeper | undefined {
    if (this.db.dialect.singleWriter) return undefined;
    const leaseMs = Math.floor(g.opts.leaseMs);
    return new LeaseKeeper(
      () =>
        this.db.withoutTransaction(() =>
          this.store.renew(this.db.exec(), reserved.id, reserved.token, leaseMs),
        ),
      leaseMs,
      (e) =>
        this.log('warn', 'lease-renewal-failed', g, {
          error: e instanceof Error ? e.message : String(e),
        }),
    ).start();
  }

  /**
   * Atomic reservation, then classification of an existing record. `quiet`: a second reservation
   * for the same request (storing a 4xx after its rollback), not counted again in metrics.
   */
  private async reserve(g: GuardedRequest, quiet = false): Promise<Reservation> {
    const { opts, info } = g;
    const exec = this.db.exec();
    const params: ReserveParams = {
      scope: info.scope,
      key: info.key,
      requestHash: g.requestHash,
      leaseToken: randomUUID(),
      leaseMs: Math.floor(opts.leaseMs),
      // Leased mode completes in another transaction, mostly within one lease of the reservation:
      // reserving ttl + leaseMs lets that completion keep the expiry (on PostgreSQL a HOT update,
      // no index entries), while a record still lives at least ttl after its completion.
      ttlMs: Math.floor(opts.ttl) + (opts.mode === 'leased' ? Math.floor(opts.leaseMs) : 0),
      lockTimeoutMs: this.options.lockTimeoutMs,
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      const started = Date.now();
      const r = await this.store.reserve(exec, params);
      this.metrics.idempotencyStoreLatency.record(Date.now() - started, { op: 'reserve' });
      if (r.outcome === 'inserted') return this.reserved(g, r.id, params.leaseToken, quiet);
      if (r.outcome === 'locked')
        return this.conflict(g, inProgress(opts.retryAfterSeconds), quiet);
      const row = r.row ?? (await this.store.find(exec, info.scope, info.key));
      if (!row) continue; // deleted between the two statements (cleanup): try again
      const taken = await this.classify(g, row, exec, params, quiet);
      if (taken) return taken;
    }
    return this.conflict(g, inProgress(opts.retryAfterSeconds), quiet);
  }

  private async classify(
    g: GuardedRequest,
    row: IdempotencyRow,
    exec: ReturnType<DatabaseService['exec']>,
    params: ReserveParams,
    quiet: boolean,
  ): Promise<Reservation | undefined> {
    const expired = row.expired;
    const leaseLapsed = row.state === 'started' && row.leaseRemainingMs <= 0;
    if (expired || leaseLapsed) {
      if (await this.store.takeOver(exec, row.id, row.leaseToken, params)) {
        if (leaseLapsed && !expired) this.log('warn', 'lease-takeover', g);
        return this.reserved(g, row.id, params.leaseToken, quiet);
      }
      return undefined; // someone else changed it: read again
    }
    return this.settledAnswer(g, row, quiet);
  }

  /** What a live record that is not ours answers: 422 for another payload, 409 in progress, or its replay. */
  private settledAnswer(
    g: GuardedRequest,
    row: IdempotencyRow,
    quiet: boolean,
  ): Exclude<Reservation, { kind: 'reserved' }> {
    if (!row.requestHash.equals(g.requestHash)) {
      this.metrics.idempotencyMismatchConflicts.add(1);
      this.log('warn', 'key-reused-with-other-request', g);
      return { kind: 'conflict', error: keyReused(g.opts.mismatchStatus) };
    }
    if (row.state === 'started') {
      return this.conflict(g, inProgress(toRetryAfterSeconds(row.leaseRemainingMs)), quiet);
    }
    let snapshot: ResponseSnapshot;
    try {
      snapshot = decodeSnapshot(
        row.responseStatus ?? 200,
        row.responseHeaders,
        row.responseBody,
        this.options.encryptionKey,
      );
    } catch (e) {
      // Sealed under another key, or altered: never run the request again, never replay garbage.
      this.log('error', 'stored-response-unreadable', g, {
        error: e instanceof Error ? e.message : String(e),
      });
      return { kind: 'conflict', error: storedResponseUnreadable() };
    }
    if (!quiet) this.metrics.idempotencyReplayed.add(1);
    this.log('log', 'replay', g, { status: row.responseStatus });
    return { kind: 'replay', snapshot };
  }

  private reserved(g: GuardedRequest, id: string, token: string, quiet = false): Reservation {
    if (!quiet) this.metrics.idempotencyStarted.add(1);
    this.log('debug', 'reserved', g);
    return { kind: 'reserved', id, token };
  }

  private conflict(
    g: GuardedRequest,
    error: ProblemException,
    quiet = false,
  ): Exclude<Reservation, { kind: 'reserved' }> {
    if (!quiet) this.metrics.idempotencyInProgressConflicts.add(1);
    this.log('log', 'in-progress', g);
    return { kind: 'conflict', error };
  }

  /**
   * Under the `wait` policy, an in-progress conflict is retried until it settles or the bound
   * passes. Returns the final answer, or undefined when the caller should try to reserve again.
   */
  private async waitOrConflict(
    g: GuardedRequest,
    r: Exclude<Reservation, { kind: 'reserved' }>,
  ): Promise<Reservation | undefined> {
    const waitable =
      r.kind === 'conflict' &&
      r.error.problem.status === 409 &&
      r.error.problem.type.endsWith('in-progress');
    if (!waitable || g.opts.inProgress.policy !== 'wait') return r;
    const state = g as GuardedRequest & { waitUntil?: number };
    state.waitUntil ??= Date.now() + g.opts.inProgress.maxWaitMs;
    if (Date.now() >= state.waitUntil) return r;
    await new Promise((resolve) => setTimeout(resolve, g.opts.inProgress.pollIntervalMs));
    return undefined;
  }

  private answer(r: Reservation, g: GuardedRequest, subscriber: Subscriber<unknown>): void {
    if (r.kind === 'replay') subscriber.error(new ReplayResponse(r.snapshot));
    else if (r.kind === 'conflict') subscriber.error(r.error);
  }

  /**
   * Runs the handler inside the current transaction, lets Nest write its answer into the
   * capture, then decides: store it (commit), or roll back.
   */
  private async runHandlerAndComplete(
    g: GuardedRequest,
    reservation: { id: string; token: string },
    next: CallHandler,
    subscriber: Subscriber<unknown>,
    capture: ResponseCapture,
  ): Promise<void> {
    let threw = false;
    let unsnapshottable: string | undefined;
    const { state: body } = trackHandlerBody(() =>
      next.handle().subscribe({
        next: (value) => {
          if (value instanceof StreamableFile || value instanceof Readable)
            unsnapshottable = 'a stream or file';
          subscriber.next(value);
        },
        error: (e) => {
          threw = true;
          subscriber.error(e);
        },
        complete: () => subscriber.complete(),
      }),
    );
    const captured = await withTimeout(capture.done, CAPTURE_TIMEOUT_MS);
    if (!captured)
      throw new Abort(() => capture.replace(...problemAnswer(serviceUnavailable(CAPTURE_TIMEOUT))));
    if (unsnapshottable || captured.streamed) {
      const problem = notSnapshottable(unsnapshottable ?? 'a streamed body');
      throw new Abort(() => capture.replace(...problemAnswer(problem)));
    }
    const { opts } = g;
    const status = captured.status;
    if (threw && !body.started) {
      // Rejected by a pipe before the handler body ran (validation): store nothing.
      throw new Abort(() => capture.release());
    }
    if (status >= 500 || !opts.storeStatus(status)) {
      // Not stored: roll back, release the key, send the answer as it is.
      throw new Abort(() => capture.release());
    }
    const snapshot = this.snapshotOf(captured, opts);
    if (!snapshot) {
      const problem = responseTooLarge(captured.body.length, opts.maxResponseBytes);
      throw new Abort(() => capture.replace(...problemAnswer(problem)));
    }
    if (threw) {
      // A stored 4xx from an exception: the handler's writes roll back, the answer is kept,
      // unless the key has meanwhile been taken by another attempt: then the client gets what
      // holds the key now (its replay, or 409), never an answer the ledger does not have.
      throw new Abort(async () => {
        const other = await this.storeAfterRollback(g, reservation, snapshot);
        if (!other) capture.release();
        else if (other.kind === 'replay') capture.replace(...replayAnswer(other.snapshot));
        else capture.replace(...problemAnswer(other.error));
      }, g.opts.mode === 'leased');
    }
    const encoded = encodeSnapshot(snapshot, this.options.encryptionKey);
    const started = Date.now();
    const ok = await this.store.complete(this.db.exec(), {
      id: reservation.id,
      leaseToken: reservation.token,
      status,
      headers: encoded.headers,
      body: encoded.body,
      ttlMs: Math.floor(opts.ttl),
      sameTransaction: opts.mode === 'transactional',
    });
    this.metrics.idempotencyStoreLatency.record(Date.now() - started, { op: 'complete' });
    if (!ok) {
      this.metrics.idempotencyCompleteFailures.add(1);
      this.log('warn', 'lease-lost', g);
      throw new Abort(() => capture.replace(...problemAnswer(leaseLost())), true);
    }
  }

  /**
   * Stores a 4xx answer after its transaction rolled back. Leased mode: completes our committed
   * reservation. Transactional mode: the reservation went with the rollback, so the key is
   * reserved again in a new short transaction and completed there. Returns undefined when the
   * answer is stored (or storing failed: nothing happened, a retry runs again), or what holds
   * the key instead (a lease taken over, a concurrent attempt, its stored answer).
   */
  private async storeAfterRollback(
    g: GuardedRequest,
    reservation: { id: string; token: string },
    snapshot: ResponseSnapshot,
  ): Promise<Exclude<Reservation, { kind: 'reserved' }> | undefined> {
    const encoded = encodeSnapshot(snapshot, this.options.encryptionKey);
    const complete = (id: string, leaseToken: string) =>
      this.store.complete(this.db.exec(), {
        id,
        leaseToken,
        status: snapshot.status,
        headers: encoded.headers,
        body: encoded.body,
        ttlMs: Math.floor(g.opts.ttl),
      });
    try {
      if (g.opts.mode === 'leased') {
        const ok = await this.db.withoutTransaction(() =>
          complete(reservation.id, reservation.token),
        );
        return ok ? undefined : { kind: 'conflict', error: leaseLost() };
      }
      let again: Reservation | undefined;
      try {
        await this.db.inNewTransaction(async () => {
          again = await this.reserve(g, true);
          if (again.kind === 'reserved' && !(await complete(again.id, again.token)))
            throw new Error('reserved record vanished');
        });
      } catch (e) {
        if (!again || again.kind === 'reserved') throw e;
      }
      return again && again.kind !== 'reserved' ? again : undefined;
    } catch (e) {
      this.log('warn', 'store-4xx-failed', g, {
        error: e instanceof Error ? e.message : String(e),
      });
      return undefined;
    }
  }

  private snapshotOf(
    c: CapturedResponse,
    opts: ResolvedEndpointOptions,
  ): ResponseSnapshot | undefined {
    const headers = storableHeaders(c.headers, opts.storedHeaders);
    if (c.body.length <= opts.maxResponseBytes) return { status: c.status, headers, body: c.body };
    if (opts.oversizedResponse === 'store-status-only')
      return { status: c.status, headers, body: null, bodyOmitted: true };
    return undefined;
  }

  /** After the transaction threw: send what the decision says, or a problem. */
  private async afterFailure(
    e: unknown,
    g: GuardedRequest,
    capture: ResponseCapture | undefined,
    subscriber: Subscriber<unknown>,
  ): Promise<void> {
    if (e instanceof Abort) {
      await e.after();
      return;
    }
    // The database failed (connection lost, commit failed, deadlock...): nothing was committed.
    this.metrics.idempotencyCompleteFailures.add(1);
    this.log('error', 'transaction-failed', g, {
      error: e instanceof Error ? e.message : String(e),
    });
    const problem = serviceUnavailable(
      'The request could not be completed because the database is unavailable. Retry with the same Idempotency-Key.',
    );
    if (capture) {
      capture.replace(...problemAnswer(problem));
    } else {
      try {
        subscriber.error(problem);
      } catch {
        sendProblem(g.res, problem);
      }
    }
  }

  private log(
    level: 'log' | 'warn' | 'error' | 'debug',
    event: string,
    g: GuardedRequest,
    extra: object = {},
  ): void {
    if (!this.logger) return;
    // With Nest's own Logger, build the line only when its level is on (hot path).
    if (this.logger instanceof Logger && !Logger.isLevelEnabled(level)) return;
    const line = JSON.stringify({
      event: `idempotency.${event}`,
      keyHash: g.info.keyHash,
      mode: g.opts.mode,
      ...extra,
    });
    (this.logger[level] ?? this.logger.log).call(this.logger, line);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => resolve(undefined), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
