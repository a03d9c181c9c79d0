import type { Subscriber } from 'rxjs';
import type { IdempotencyEvent, ResolvedIdempotencyOptions } from '../idempotency.options';
import { ExactlyOnceEvents } from '../events/exactly-once.events';
import { LibraryLogger, type LibraryLogLevel } from '../observability/library-logger';
import { type MetricsService } from '../observability/metrics.service';
import type { LedgerDecision, SettledDecision } from '../persistence/idempotency-ledger';
import type { GuardedRequest } from './guarded-request';
import { problemAnswer, PROBLEM_TYPES, type ProblemException } from '../problem-details';
import { replayAnswer, ReplayResponse } from './idempotency-exception.filter';
import {
  inProgress,
  keyReused,
  storedResponseKeyUnknown,
  storedResponseNotEncrypted,
  storedResponseUnreadable,
} from './idempotency.errors';
import { StoredAnswerError } from '../encryption/answer-envelope';
import { requestPath } from '../internal/http-platform';
import type { ResponseCapture } from './response-capture';
import { decodeSnapshot, type ResponseSnapshot, sealingOf } from './response-snapshot';

/** What a request that does not run answers: a stored replay, or a problem. */
export type GateAnswer =
  { kind: 'replay'; snapshot: ResponseSnapshot } | { kind: 'problem'; error: ProblemException };

/**
 * Turns the ledger's decisions into HTTP answers (a replay of the stored bytes, 409, 422, 500 for
 * an unreadable record), applies the `wait` in-progress policy, and tells metrics, logs and the
 * `onEvent` hook what was answered.
 * @internal
 */
export class GateAnswers {
  private readonly logger: LibraryLogger;
  /**
   * Decoded answers of records the replay cache holds (the same answer object on every hit), so
   * a replay parses the stored headers once, not per request. Never with a key ring: a sealed
   * answer stays sealed in memory and is opened per replay.
   */
  private readonly decoded = new WeakMap<object, ResponseSnapshot>();

  constructor(
    private readonly metrics: MetricsService,
    private readonly options: ResolvedIdempotencyOptions,
    private readonly events: ExactlyOnceEvents = new ExactlyOnceEvents(),
  ) {
    this.logger = new LibraryLogger(options.logger, 'Idempotency');
  }

  /** The key is ours: count it (not again for a second reservation of the same request). */
  reserved(g: GuardedRequest, d: Extract<LedgerDecision, { kind: 'reserved' }>): void {
    this.metrics.idempotencyStarted.add(1);
    if (d.takenOver === 'lease-lapsed') this.log('warn', 'lease-takeover', g);
    this.log('debug', 'reserved', g);
  }

  /**
   * The answer to a decision other than `reserved`. `quiet`: a second look at the same request
   * (storing a 4xx after its rollback), not counted again in metrics.
   */
  of(g: GuardedRequest, d: SettledDecision, quiet = false): GateAnswer {
    switch (d.kind) {
      case 'in-progress':
        if (!quiet) this.metrics.idempotencyInProgressConflicts.add(1);
        this.log('debug', 'in-progress', g);
        return { kind: 'problem', error: inProgress(d.retryAfterSeconds) };
      case 'mismatch':
        this.metrics.idempotencyMismatchConflicts.add(1);
        this.log('warn', 'key-reused-with-other-request', g);
        return { kind: 'problem', error: keyReused(g.opts.mismatchStatus) };
      case 'replay': {
        let snapshot = this.decoded.get(d.answer);
        try {
          if (!snapshot) {
            const ring = this.options.encryption;
            snapshot = decodeSnapshot(
              d.answer.status,
              d.answer.headers,
              d.answer.body,
              sealingOf(ring, g.ledger),
            );
            if (!ring) this.decoded.set(d.answer, snapshot);
          }
        } catch (e) {
          // Sealed under a key no longer in the ring, altered, moved from another record, or
          // plaintext while keys are set: never run the request again, never replay it.
          return { kind: 'problem', error: this.unreplayable(g, e) };
        }
        if (!quiet) this.metrics.idempotencyReplayed.add(1);
        this.log('debug', 'replay', g, { status: d.answer.status });
        return { kind: 'replay', snapshot };
      }
    }
  }

  /** The problem answering a stored answer that cannot be replayed (logged at error level). */
  private unreplayable(g: GuardedRequest, e: unknown): ProblemException {
    const u = unreplayableAnswer(e);
    this.log('error', u.event, g, u.fields);
    return u.error;
  }

  /**
   * Under the `wait` policy, an in-progress answer is held back while the first request may
   * still settle: undefined means "wait is over, try again". Any other answer stands.
   */
  async waitOrAnswer(g: GuardedRequest, a: GateAnswer): Promise<GateAnswer | undefined> {
    const waitable = a.kind === 'problem' && a.error.problem.type === PROBLEM_TYPES.inProgress;
    if (!waitable || g.opts.inProgress.policy !== 'wait') return a;
    g.waitUntil ??= Date.now() + g.opts.inProgress.maxWaitMs;
    if (Date.now() >= g.waitUntil) return a;
    await new Promise((resolve) => setTimeout(resolve, g.opts.inProgress.pollIntervalMs));
    return undefined;
  }

  /** Answers through Nest (the method-scoped exception filter writes it). */
  send(g: GuardedRequest, a: GateAnswer, subscriber: Subscriber<unknown>): void {
    subscriber.error(this.thrown(g, a));
  }

  /**
   * What the gate throws to Nest for an answer (a replay, or a problem), once its event and trace
   * are told: the method-scoped exception filter writes it.
   */
  thrown(g: GuardedRequest, a: GateAnswer): ReplayResponse | ProblemException {
    this.emitFor(g, a);
    this.trace(g, a);
    return a.kind === 'replay' ? new ReplayResponse(a.snapshot, g.replayHeaders) : a.error;
  }

  /** Answers in place of what the handler wrote into the capture. */
  sendInto(g: GuardedRequest, a: GateAnswer, capture: ResponseCapture): void {
    this.emitFor(g, a);
    this.trace(g, a);
    if (a.kind === 'replay') capture.replace(...replayAnswer(a.snapshot, g.replayHeaders));
    else capture.replace(...problemAnswer(a.error, requestPath(g.req)));
  }

  /** Sends a first execution's stored answer (with the status header when on). */
  created(g: GuardedRequest, capture: ResponseCapture): void {
    if (g.createdStatus !== undefined) {
      if (g.opts.statusHeader) capture.setHeader(g.opts.statusHeader, 'created');
      this.emit(g, 'created', g.createdStatus);
      g.trace?.created(g.createdStatus);
    }
    capture.release();
  }

  /** Tells the request's span what was answered (see `observability/gate.tracing.ts`). */
  trace(g: GuardedRequest, a: GateAnswer | ProblemException): void {
    if (!g.trace) return;
    if (!('kind' in a)) return g.trace.problem(a.problem.type, a.problem.status);
    if (a.kind === 'replay') g.trace.replayed(a.snapshot.status);
    else g.trace.problem(a.error.problem.type, a.error.problem.status);
  }

  private emitFor(g: GuardedRequest, a: GateAnswer): void {
    if (!g.opts.onEvent && !this.events.observed('gate')) return;
    if (a.kind === 'replay') return this.emit(g, 'replayed', a.snapshot.status);
    const { type, status } = a.error.problem;
    if (type === PROBLEM_TYPES.mismatch) this.emit(g, 'mismatch', status);
    else if (type === PROBLEM_TYPES.inProgress || type === PROBLEM_TYPES.leaseLost) {
      this.emit(g, 'conflict', status);
    }
  }

  private emit(g: GuardedRequest, kind: IdempotencyEvent['kind'], status: number): void {
    const { keyHash } = g.info;
    this.events.emitGate(
      g.opts,
      kind,
      status,
      { keyHash, method: g.method, path: g.path, request: g.req },
      (error) => this.log('warn', 'on-event-failed', g, { error }),
    );
  }

  /** One structured log event per gate event (only the key's hash, never the key). */
  log(level: LibraryLogLevel, event: string, g: GuardedRequest, extra: object = {}): void {
    this.logger.event(level, `idempotency.${event}`, () => ({
      keyHash: g.info.keyHash,
      mode: g.opts.mode,
      ...extra,
    }));
  }
}

export const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * Why a stored answer cannot be replayed, for every context's gate: sealed under a key id no
 * longer in the ring, plaintext while keys are set, or unreadable (altered, moved, not ours).
 * Such a call is never run again: the caller gets the problem, the log its event at error level.
 */
export function unreplayableAnswer(e: unknown): {
  event: string;
  fields?: Record<string, unknown>;
  error: ProblemException;
} {
  const fault = e instanceof StoredAnswerError ? e.fault : 'unreadable';
  const keyId = e instanceof StoredAnswerError ? e.keyId : undefined;
  if (fault === 'key-unknown' && keyId !== undefined) {
    return {
      event: 'stored-response-key-unknown',
      fields: { keyId },
      error: storedResponseKeyUnknown(keyId),
    };
  }
  if (fault === 'plaintext') {
    return { event: 'stored-response-not-encrypted', error: storedResponseNotEncrypted() };
  }
  return {
    event: 'stored-response-unreadable',
    fields: { error: errorText(e) },
    error: storedResponseUnreadable(),
  };
}
