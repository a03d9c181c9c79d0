import type { CallHandler } from '@nestjs/common';
import type { Subscriber } from 'rxjs';
import type { ResolvedEndpointOptions, ResolvedIdempotencyOptions } from '../idempotency.options';
import { type MetricsService } from '../observability/metrics.service';
import { resolveWithin } from '../internal/timeouts';
import { misconfigured, problemAnswer, sendProblem, serviceUnavailable } from '../problem-details';
import { isMisconfiguration } from '../persistence/database-misconfigured';
import { type DatabaseService } from '../persistence/database.service';
import type { IdempotencyLedger, Reservation } from '../persistence/idempotency-ledger';
import { errorText, type GateAnswer, type GateAnswers } from './gate-answers';
import { Abort, type GuardedRequest } from './guarded-request';
import { trackHandlerBody } from './handler-body.tracker';
import { rawResponse, requestPath, routeTemplate } from '../internal/http-platform';
import { leaseLost, notSnapshottable, responseTooLarge } from './idempotency.errors';
import { CAPTURE_TIMEOUT, NOT_SNAPSHOTTABLE_FIX } from './idempotency.messages';
import { type CapturedResponse, type ResponseCapture } from './response-capture';
import {
  encodeSnapshot,
  type ResponseSnapshot,
  sealingOf,
  storableHeaders,
} from './response-snapshot';
import { discardStream, isStreamLike } from './stream-like';

const CAPTURE_TIMEOUT_MS = 30_000;

/**
 * Runs a guarded handler once on a reservation we hold, inside the current transaction: lets
 * Nest write its answer into the capture, then decides what becomes of it — stored with the
 * business writes (commit), or rolled back (5xx, an answer that cannot be stored, a stray write),
 * or rolled back and stored on its own (a thrown 4xx). Failures of the database map to 503,
 * configuration errors to 500.
 * @internal
 */
export class HandlerExecution {
  constructor(
    private readonly db: DatabaseService,
    private readonly ledger: IdempotencyLedger,
    private readonly answers: GateAnswers,
    private readonly metrics: MetricsService,
    private readonly options: ResolvedIdempotencyOptions,
  ) {}

  async run(
    g: GuardedRequest,
    reservation: Reservation,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
    capture: ResponseCapture,
  ): Promise<void> {
    let threw = false;
    // strayWrites: a write outside this transaction while the handler runs is refused or logged.
    const strayWrites = this.db.strayWrites.watch(
      g.opts.strayWrites,
      this.db.manager.queryRunner,
      `${g.method} ${g.path}`,
    );
    // The handler's result is known (it returned, or threw): until then the answer is not final,
    // even when the handler already ended the response itself (@Res({ passthrough: true })).
    let handlerDone!: () => void;
    const finished = new Promise<void>((r) => (handlerDone = r));
    const { state: body } = trackHandlerBody(() =>
      next.handle().subscribe({
        next: (value) => {
          if (isResponseObject(value, g.res)) {
            // `return res.status(201).json(…)`: the answer is what was written; Nest must not
            // serialize the response object itself as a second one.
            value = undefined;
          } else if (isStreamLike(value)) {
            // Never handed to Nest: it would stream it, or store its JSON dump. Nest sends an
            // empty answer instead, which the capture holds back, and the refusal replaces it.
            capture.refuse('a stream or file');
            discardStream(value);
            value = undefined;
          } else if (capture.ended && value !== undefined && value !== null) {
            capture.refuse('a body written through the response object and a returned value both');
          }
          subscriber.next(value);
        },
        error: (e) => {
          threw = true;
          handlerDone();
          if (capture.ended) {
            capture.refuse('a body written through the response object and an exception both');
          }
          subscriber.error(e);
        },
        complete: () => {
          handlerDone();
          subscriber.complete();
        },
      }),
    );
    const captured = await resolveWithin(
      capture.done.then(async (c) => (await finished, c)),
      CAPTURE_TIMEOUT_MS,
    );
    // Throws (500 misconfigured, rolled back) when a write escaped under strayWrites 'error'.
    this.db.strayWrites.end(strayWrites);
    const instance = requestPath(g.req);
    if (!captured) {
      throw new Abort(() =>
        capture.replace(...problemAnswer(serviceUnavailable(CAPTURE_TIMEOUT), instance)),
      );
    }
    const unstorable = capture.unstorable ?? (captured.streamed ? 'a streamed body' : undefined);
    if (unstorable) {
      // A bug of the endpoint, not of the request: the server's log says which route and why.
      this.answers.log('error', 'response-not-snapshottable', g, {
        method: g.method,
        route: routeTemplate(g.req, '') || g.path,
        answer: unstorable,
        fix: NOT_SNAPSHOTTABLE_FIX,
      });
      const problem = notSnapshottable(unstorable);
      throw new Abort(() => capture.replace(...problemAnswer(problem, instance)));
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
    const snapshot = snapshotOf(captured, opts);
    if (!snapshot) {
      const problem = responseTooLarge(captured.body.length, opts.maxResponseBytes);
      throw new Abort(() => capture.replace(...problemAnswer(problem, instance)));
    }
    if (threw) {
      // A stored 4xx from an exception: the handler's writes roll back, the answer is kept,
      // unless the key has meanwhile been taken by another attempt: then the client gets what
      // holds the key now (its replay, or 409), never an answer the ledger does not have.
      throw new Abort(async () => {
        const other = await this.storeAfterRollback(g, reservation, snapshot);
        if (other) return this.answers.sendInto(g, other, capture);
        g.createdStatus = status;
        this.answers.created(g, capture);
      }, g.opts.mode === 'leased');
    }
    const encoded = encodeSnapshot(snapshot, sealingOf(this.options.encryption, g.ledger));
    const ok = await this.ledger.complete(
      reservation,
      { status, headers: encoded.headers, body: encoded.body },
      { ttlMs: opts.ttl, sameTransaction: opts.mode === 'transactional' },
    );
    if (!ok && reservation.deferred) {
      // Single write: a committed record of this key got there first (it committed after our
      // claim read the key, before our lock). Roll back and answer what holds the key.
      this.answers.log('warn', 'raced-committed-record', g);
      throw new Abort(async () => {
        const holder = await this.ledger.lookUpCompleted(g.ledger);
        const answer = this.answers.of(
          g,
          holder ?? { kind: 'in-progress', retryAfterSeconds: g.opts.retryAfterSeconds },
        );
        this.answers.sendInto(g, answer, capture);
      });
    }
    if (!ok) {
      this.metrics.idempotencyCompleteFailures.add(1);
      this.answers.log('warn', 'lease-lost', g);
      throw new Abort(() => capture.replace(...problemAnswer(leaseLost(), instance)), true);
    }
    g.createdStatus = status;
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
    reservation: Reservation,
    snapshot: ResponseSnapshot,
  ): Promise<GateAnswer | undefined> {
    const encoded = encodeSnapshot(snapshot, sealingOf(this.options.encryption, g.ledger));
    const answer = { status: snapshot.status, headers: encoded.headers, body: encoded.body };
    const complete = (r: Reservation) => this.ledger.complete(r, answer, { ttlMs: g.opts.ttl });
    try {
      if (g.opts.mode === 'leased') {
        const ok = await this.db.withoutTransaction(() => complete(reservation));
        return ok ? undefined : { kind: 'problem', error: leaseLost() };
      }
      let other: GateAnswer | undefined;
      try {
        await this.db.inTransaction(async () => {
          const again = await this.ledger.reserve(g.ledger);
          if (again.kind !== 'reserved') {
            other = this.answers.of(g, again, true);
            return;
          }
          if (!(await complete(again.reservation))) throw new Error('reserved record vanished');
        });
      } catch (e) {
        // A decision that wrote nothing stands even if only the end of its transaction failed.
        if (!other) throw e;
      }
      return other;
    } catch (e) {
      this.answers.log('warn', 'store-4xx-failed', g, { error: errorText(e) });
      return undefined;
    }
  }

  /** After the transaction threw: send what the decision says, or a problem. */
  async afterFailure(
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
    this.answers.log('error', 'transaction-failed', g, { error: errorText(e) });
    // A configuration error (missing table, plugin, a write outside the transaction) is a 500:
    // retrying cannot help. Anything else is the database failing: 503, retry.
    const problem = isMisconfiguration(e)
      ? misconfigured()
      : serviceUnavailable(
          'The request could not be completed because the database is unavailable. Retry with the same Idempotency-Key.',
        );
    this.answers.trace(g, problem);
    if (capture) {
      capture.replace(...problemAnswer(problem, requestPath(g.req)));
    } else {
      try {
        subscriber.error(problem);
      } catch {
        sendProblem(g.res, problem, requestPath(g.req));
      }
    }
  }
}

function snapshotOf(
  c: CapturedResponse,
  opts: ResolvedEndpointOptions,
): ResponseSnapshot | undefined {
  const headers = storableHeaders(c.headers, opts.storedHeaders, c.headerNames);
  if (c.body.length <= opts.maxResponseBytes) return { status: c.status, headers, body: c.body };
  if (opts.oversizedResponse === 'store-status-only') {
    return { status: c.status, headers, body: null, bodyOmitted: true };
  }
  return undefined;
}

/** The platform's response object (or the raw Node response under it). */
function isResponseObject(value: unknown, res: unknown): boolean {
  return value !== undefined && (value === res || value === rawResponse(res));
}
