import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { MetricsService } from '../observability/metrics.service';
import { DatabaseService } from './database.service';
import type {
  IdempotencyRow,
  IdempotencySql,
  ReserveParams,
  SingleWriteIdempotencySql,
} from './dialects';
import { ReadFirstPolicy } from './read-first.policy';
import { ReplayCache } from './replay.cache';
import { toRetryAfterSeconds } from './time';

/** One request's claim on a key, as the ledger needs it (no HTTP in here). */
export interface LedgerRequest {
  scope: string;
  key: string;
  /** The request's fingerprint (32 bytes). */
  requestHash: Buffer;
  mode: 'transactional' | 'leased';
  /** How long a completed record is replayed, in ms. */
  ttlMs: number;
  /** Leased mode: how long the reservation holds the key without renewal, in ms. */
  leaseMs: number;
  /** Longest `Retry-After` told to a duplicate of an in-flight request, in seconds. */
  retryAfterSeconds: number;
}

/**
 * A reservation we hold: its record and the lease token that proves it is ours; or, in the
 * single-write transactional path, the key's lock and no record yet (`deferred`): the completed
 * record is written at the end, in one statement.
 */
export interface Reservation {
  id: string;
  token: string;
  /** The replay cache's clock (`ReplayCache.now()`) before the reservation's statement (its record expires ttl after a later moment). */
  since?: number;
  /** The request that holds it (the replay cache keeps its answer once completed and committed). */
  request?: LedgerRequest;
  deferred?: {
    request: LedgerRequest;
    /** The expired record, or the lapsed lease, that the completed record replaces. */
    replace?: { id: string; expectedToken: string | null };
  };
}

/** A completed record's stored answer, still encoded as stored. */
export interface StoredAnswer {
  status: number;
  headers: string | null;
  body: Buffer | null;
}

/**
 * What the ledger decided for a request:
 * - `reserved`: the key is ours; run the handler (`takenOver` says whose record we replaced);
 * - `replay`: a completed record of the same request answers;
 * - `in-progress`: another request with this key is in flight (answer 409 with `retryAfterSeconds`);
 * - `mismatch`: a completed record of another request holds the key (answer 422).
 */
export type LedgerDecision =
  | { kind: 'reserved'; reservation: Reservation; takenOver?: 'expired' | 'lease-lapsed' }
  | { kind: 'replay'; answer: StoredAnswer }
  | { kind: 'in-progress'; retryAfterSeconds: number }
  | { kind: 'mismatch' };

/** A decision other than `reserved`: what answers a request that does not run. */
export type SettledDecision = Exclude<LedgerDecision, { kind: 'reserved' }>;

/** Reservation attempts before a key that keeps changing under us counts as in flight. */
const RESERVE_ATTEMPTS = 3;

/**
 * The idempotency ledger, as a port that decides: it reserves a key atomically, classifies an
 * existing record (live, expired, lease lapsed, completed, another request), takes expired
 * records and lapsed leases over with a compare-and-set, retries when a record vanishes under it,
 * and owns the read-first policy for replay-heavy subjects. Its callers get domain decisions,
 * never rows or HTTP errors. Statements come from the database's dialect; they run on the
 * ambient transaction's executor (transactional mode), or in autocommit where the method says so.
 * @internal
 */
@Injectable()
export class IdempotencyLedger {
  private readonly readFirstPolicy = new ReadFirstPolicy();

  constructor(
    private readonly db: DatabaseService,
    private readonly metrics: MetricsService,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly cache: ReplayCache,
  ) {}

  /**
   * One writer for the whole database (SQLite): every statement waits for the transaction in
   * progress, so duplicates of an in-flight request must be caught in process, and no statement
   * may run beside a handler's transaction (no lease renewal).
   */
  get singleWriter(): boolean {
    return this.db.dialect.singleWriter;
  }

  private get sql(): IdempotencySql {
    return this.db.dialect.idempotency;
  }

  /**
   * Reserves the key on the current executor (inside the business transaction in transactional
   * mode, autocommit in leased mode): a new record, an expired one or a lapsed lease taken over,
   * or the decision an existing record makes.
   */
  async reserve(req: LedgerRequest): Promise<LedgerDecision> {
    // Transactional mode asked the shared tier in settleBeforeTransaction; leased mode starts here.
    const cached =
      this.fromCache(req) ?? (req.mode === 'leased' ? await this.fromSharedCache(req) : undefined);
    if (cached) return cached;
    const singleWrite = this.sql.singleWrite;
    if (req.mode === 'transactional' && singleWrite) return this.claim(req, singleWrite);
    const exec = this.db.exec();
    const params = this.reserveParams(req);
    for (let attempt = 0; attempt < RESERVE_ATTEMPTS; attempt++) {
      const since = this.cache.now();
      const started = Date.now();
      const r = await this.sql.reserve(exec, params);
      this.metrics.idempotencyStoreLatency.record(Date.now() - started, { op: 'reserve' });
      if (r.outcome === 'inserted') return reserved(req, r.id, params.leaseToken, since);
      if (r.outcome === 'locked') {
        return { kind: 'in-progress', retryAfterSeconds: req.retryAfterSeconds };
      }
      const row = r.row ?? (await this.sql.find(exec, req.scope, req.key));
      if (!row) continue; // deleted between the two statements (cleanup): try again
      const expired = row.expired;
      const leaseLapsed = row.state === 'started' && row.leaseRemainingMs <= 0;
      if (!expired && !leaseLapsed) return this.settleRow(req, row, since);
      if (await this.sql.takeOver(exec, row.id, row.leaseToken, params)) {
        return reserved(
          req,
          row.id,
          params.leaseToken,
          since,
          expired ? 'expired' : 'lease-lapsed',
        );
      }
      // Someone else changed the record between our read and our compare-and-set: read again.
    }
    return { kind: 'in-progress', retryAfterSeconds: req.retryAfterSeconds };
  }

  /**
   * Transactional mode in one write: the key's transaction-scoped lock and its record in one
   * statement; nothing is written until `complete`.
   */
  private async claim(
    req: LedgerRequest,
    singleWrite: SingleWriteIdempotencySql,
  ): Promise<LedgerDecision> {
    const since = this.cache.now();
    const started = Date.now();
    const { locked, row } = await singleWrite.claim(this.db.exec(), {
      scope: req.scope,
      key: req.key,
      lockTimeoutMs: this.options.lockTimeoutMs,
    });
    this.metrics.idempotencyStoreLatency.record(Date.now() - started, { op: 'reserve' });
    if (locked) {
      // Another transaction holds the key: an uncommitted first execution, a take-over, or a
      // concurrent replay's transaction. A committed, live record answers for itself.
      return row && !row.expired
        ? this.settleRow(req, row, since)
        : { kind: 'in-progress', retryAfterSeconds: req.retryAfterSeconds };
    }
    if (!row) {
      return {
        kind: 'reserved',
        reservation: { id: '', token: '', since, deferred: { request: req } },
      };
    }
    const leaseLapsed = row.state === 'started' && row.leaseRemainingMs <= 0;
    if (!row.expired && !leaseLapsed) return this.settleRow(req, row, since);
    return {
      kind: 'reserved',
      reservation: {
        id: row.id,
        token: '',
        since,
        deferred: { request: req, replace: { id: row.id, expectedToken: row.leaseToken } },
      },
      takenOver: row.expired ? 'expired' : 'lease-lapsed',
    };
  }

  /**
   * A decision reached before any transaction is opened, or undefined (then `reserve` in the
   * transaction decides): a completed record this process already knows (no statement at all),
   * or, for a replay-heavy subject (an endpoint), one read outside any transaction (see
   * ReadFirstPolicy). Only committed, live, completed records answer here.
   */
  async settleBeforeTransaction(
    req: LedgerRequest,
    subject: unknown,
  ): Promise<SettledDecision | undefined> {
    const cached = this.fromCache(req) ?? (await this.fromSharedCache(req));
    if (cached) return cached;
    if (!this.shouldReadFirst(subject)) return undefined;
    const settled = await this.lookUpCompleted(req);
    if (settled) this.observe(subject, settled.kind === 'replay');
    return settled;
  }

  /**
   * Whether a replay-heavy subject (an endpoint) should first look its key up with one read
   * outside any transaction (see ReadFirstPolicy). Only where reads never wait for writers.
   */
  shouldReadFirst(subject: unknown): boolean {
    return this.db.dialect.nonBlockingReads && this.readFirstPolicy.readFirst(subject);
  }

  /** Records whether a subject's request was answered by a settled record. */
  observe(subject: unknown, answeredByRecord: boolean): void {
    this.readFirstPolicy.observe(subject, answeredByRecord);
  }

  /**
   * One read outside any transaction: a committed, live, completed record answers (its replay,
   * or a mismatch); anything else (no record, in flight, expired, a failed read) is undefined and
   * the request goes on to `reserve`, which decides.
   */
  async lookUpCompleted(req: LedgerRequest): Promise<SettledDecision | undefined> {
    const cached = this.fromCache(req);
    if (cached) return cached;
    let row: IdempotencyRow | undefined;
    const since = this.cache.now();
    try {
      const started = Date.now();
      row = await this.db.withoutTransaction(() =>
        this.sql.find(this.db.exec(), req.scope, req.key),
      );
      this.metrics.idempotencyStoreLatency.record(Date.now() - started, { op: 'lookup' });
    } catch {
      return undefined;
    }
    if (!row || row.state !== 'completed' || row.expired) return undefined;
    return this.settleRow(req, row, since);
  }

  /**
   * Stores the answer on our reservation (compare-and-set on the lease token) on the current
   * executor, or, for a deferred one, writes the completed record. False when the reservation is
   * no longer ours (taken over, released, completed), or when a committed record of the key got
   * there first (deferred: the caller rolls back and answers that record).
   */
  async complete(
    reservation: Reservation,
    answer: { status: number; headers: string; body: Buffer | null },
    opts: { ttlMs: number; sameTransaction?: boolean },
  ): Promise<boolean> {
    const started = Date.now();
    const deferred = reservation.deferred;
    const ok = deferred
      ? await this.sql.singleWrite!.insertCompleted(this.db.exec(), {
          scope: deferred.request.scope,
          key: deferred.request.key,
          requestHash: deferred.request.requestHash,
          status: answer.status,
          headers: answer.headers,
          body: answer.body,
          ttlMs: Math.floor(opts.ttlMs),
          replace: deferred.replace,
        })
      : await this.sql.complete(this.db.exec(), {
          id: reservation.id,
          leaseToken: reservation.token,
          status: answer.status,
          headers: answer.headers,
          body: answer.body,
          ttlMs: Math.floor(opts.ttlMs),
          sameTransaction: opts.sameTransaction,
        });
    this.metrics.idempotencyStoreLatency.record(Date.now() - started, { op: 'complete' });
    if (ok && (this.cache.enabled || this.cache.shared) && reservation.since !== undefined) {
      const req = deferred?.request ?? reservation.request;
      if (req) {
        this.db.afterCommit(() => {
          const record = { requestHash: req.requestHash, ...answer };
          // The record expires ttl after a statement that ran after `since` (the reservation,
          // or, where the dialect resets the expiry, the completion).
          const lifetimeMs = Math.floor(opts.ttlMs);
          this.cache.set(req.scope, req.key, record, lifetimeMs, reservation.since!);
          this.cache.share(req.scope, req.key, record, lifetimeMs, reservation.since!);
        });
      }
    }
    return ok;
  }

  /**
   * Leased mode, autocommit: extends our lease to `leaseMs` from now; false when no longer ours.
   * On the renewal connection, beside the pool: a pool whose every connection is held by leased
   * handlers must not keep their leases from being renewed (see LeaseRenewalConnection).
   */
  async renew(reservation: Reservation, leaseMs: number): Promise<boolean> {
    const exec = await this.db.leaseRenewals.executor();
    return this.sql.renew(exec, reservation.id, reservation.token, Math.floor(leaseMs));
  }

  /** Leased mode, autocommit: deletes our started reservation so that a retry runs at once. */
  release(reservation: Reservation): Promise<void> {
    return this.db.withoutTransaction(() =>
      this.sql.release(this.db.exec(), reservation.id, reservation.token),
    );
  }

  /**
   * A live completed record this process's replay cache holds answers (replay or mismatch), with
   * no statement and nothing asynchronous: the gate asks it first, before any other step.
   */
  fromCache(req: LedgerRequest): SettledDecision | undefined {
    const hit = this.cache.get(req.scope, req.key);
    if (!hit) return undefined;
    if (!hit.requestHash.equals(req.requestHash)) return { kind: 'mismatch' };
    // The cached record itself: the same object on every hit, so its decoded form can be kept.
    return { kind: 'replay', answer: hit };
  }

  /** A live completed record the shared tier (`replayCache.store`) holds, or undefined. */
  private async fromSharedCache(req: LedgerRequest): Promise<SettledDecision | undefined> {
    if (!this.cache.shared) return undefined;
    const hit = await this.cache.getShared(req.scope, req.key);
    if (!hit) return undefined;
    if (!hit.requestHash.equals(req.requestHash)) return { kind: 'mismatch' };
    return { kind: 'replay', answer: hit };
  }

  /** What a committed row decides; a live completed one is kept in the replay cache. */
  private settleRow(req: LedgerRequest, row: IdempotencyRow, since: number): SettledDecision {
    if (row.state === 'completed' && !row.expired && row.expiresInMs !== undefined) {
      this.cache.set(
        req.scope,
        req.key,
        {
          requestHash: row.requestHash,
          status: row.responseStatus ?? 200,
          headers: row.responseHeaders,
          body: row.responseBody,
        },
        row.expiresInMs,
        since,
      );
    }
    return settle(req, row);
  }

  private reserveParams(req: LedgerRequest): ReserveParams {
    const leaseMs = Math.floor(req.leaseMs);
    return {
      scope: req.scope,
      key: req.key,
      requestHash: req.requestHash,
      leaseToken: randomUUID(),
      leaseMs,
      // Leased mode completes in another transaction, mostly within one lease of the reservation:
      // reserving ttl + leaseMs lets that completion keep the expiry (on PostgreSQL a HOT update,
      // no index entries), while a record still lives at least ttl after its completion.
      ttlMs: Math.floor(req.ttlMs) + (req.mode === 'leased' ? leaseMs : 0),
      lockTimeoutMs: this.options.lockTimeoutMs,
    };
  }
}

const reserved = (
  request: LedgerRequest,
  id: string,
  token: string,
  since: number,
  takenOver?: 'expired' | 'lease-lapsed',
): LedgerDecision => ({ kind: 'reserved', reservation: { id, token, since, request }, takenOver });

/**
 * What a live record that is not ours decides: in flight → in progress, whatever the payload (in
 * transactional mode an in-flight record cannot be read at all, so every database and mode
 * answers the same); then another fingerprint → mismatch; else the replay.
 */
export function settle(req: LedgerRequest, row: IdempotencyRow): SettledDecision {
  if (row.state === 'started') {
    // Leased mode: a short poll while the first attempt is alive (its lease is renewed every
    // third of leaseMs), never the whole lease.
    const retryAfterSeconds = Math.min(
      toRetryAfterSeconds(row.leaseRemainingMs),
      req.retryAfterSeconds,
    );
    return { kind: 'in-progress', retryAfterSeconds };
  }
  if (!row.requestHash.equals(req.requestHash)) return { kind: 'mismatch' };
  return {
    kind: 'replay',
    answer: {
      status: row.responseStatus ?? 200,
      headers: row.responseHeaders,
      body: row.responseBody,
    },
  };
}
