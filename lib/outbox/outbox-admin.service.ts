import { Injectable } from '@nestjs/common';
import type { OutboxDeadFilter, OutboxRow, OutboxStatus } from '../persistence/dialects';
import { type OutboxFailureRecord, parseFailures } from './outbox-failure.policy';
import { OutboxDeadFilterRequiredError } from './outbox.errors';
import { DEFAULT_ROUTE } from './outbox-routing.options';
import { OutboxWakeSignal } from './outbox-wake.signal';
import { OutboxStore } from './outbox.store';

/** An outbox message as the admin API shows it. */
export interface OutboxEntry {
  seq: string;
  id: string;
  type: string;
  status: OutboxStatus;
  partitionKey: string | null;
  /** Publish attempts made, the one that succeeded included (a sent message shows at least 1). */
  attempts: number;
  /** Parsed payload (the stored text when it is not valid JSON). */
  payload: unknown;
  headers: Record<string, string>;
  lastError: string | null;
  nextAttemptAt: Date | null;
  leaseOwner: string | null;
  lockedUntil: Date | null;
  createdAt: Date;
  sentAt: Date | null;
  /**
   * The newest failed attempts (at most 10, oldest first; each message cut to 500 characters):
   * time (the relay's clock), attempt number, relay instance, error class and message. A requeue
   * keeps them: the attempt numbers start again at 1 after it.
   */
  failures: OutboxFailureRecord[];
  /** When the last failed attempt was recorded (database clock), or null. */
  failedAt: Date | null;
  /** The publisher it is routed to (fixed when it was added; `default` for the `outbox.publisher` option). */
  route: string;
}

/**
 * Which dead messages a filtered requeue or purge applies to: every criterion given must hold.
 * A filter with no criterion is refused unless `all: true` says "every dead message".
 */
export interface OutboxDeadLetterFilter {
  /** Exact message type. */
  type?: string;
  /** Exact partition key. */
  partitionKey?: string;
  /** Last failed attempt at or after this time. */
  failedAfter?: Date;
  /** Last failed attempt before this time. */
  failedBefore?: Date;
  /** Text found in the last error, case-insensitively. */
  errorContains?: string;
  /** No criterion on purpose: every dead message. */
  all?: boolean;
}

/** Dead messages a filtered requeue or purge handles per statement (a short lock each). */
export const DEAD_LETTER_BATCH = 500;

/** Which outbox messages the admin service lists: by status and partition key, a page at a time. */
export interface OutboxListFilter {
  status?: OutboxStatus;
  partitionKey?: string;
  /** Keyset paging: only messages after this sequence number. */
  afterSeq?: string;
  /** At most this many (default 100, at most 1000). */
  limit?: number;
  /** Newest first (the console's "recent messages"); default oldest first. */
  newestFirst?: boolean;
}

/**
 * Operations on the outbox: list messages (dead letters especially), re-queue dead or sent ones
 * (the relay of this process is woken), purge dead ones, count by status. Statements run on
 * their own, outside any ambient transaction.
 */
@Injectable()
export class OutboxAdminService {
  constructor(
    private readonly store: OutboxStore,
    private readonly signal: OutboxWakeSignal,
  ) {}

  /** Messages in sequence order, filtered by status and/or partition key. */
  async list(filter: OutboxListFilter = {}): Promise<OutboxEntry[]> {
    const limit = Math.min(1000, Math.max(1, Math.floor(filter.limit ?? 100)));
    const rows = await this.store.list({
      status: filter.status,
      partitionKey: filter.partitionKey,
      afterSeq: filter.afterSeq,
      newestFirst: filter.newestFirst,
      limit,
    });
    return rows.map(toEntry);
  }

  /** Dead letters: messages that exhausted `outbox.maxAttempts`, oldest first. */
  listDead(limit = 100, afterSeq?: string): Promise<OutboxEntry[]> {
    return this.list({ status: 'dead', limit, afterSeq });
  }

  /** One message by id, or undefined. */
  async get(id: string): Promise<OutboxEntry | undefined> {
    const [row] = await this.store.findByIds([id]);
    return row ? toEntry(row) : undefined;
  }

  /**
   * Puts dead (or sent) messages back to pending, attempts reset and due at once, and wakes the
   * relay of this process. Pending messages are left alone. Returns how many were re-queued.
   */
  async requeue(ids: string | readonly string[]): Promise<number> {
    const n = await this.store.requeue(typeof ids === 'string' ? [ids] : [...ids]);
    if (n > 0) this.signal.notify();
    return n;
  }

  /** Deletes dead messages for good; returns how many. */
  purgeDead(ids: string | readonly string[]): Promise<number> {
    return this.store.purgeDead(typeof ids === 'string' ? [ids] : [...ids]);
  }

  /** Number of messages per status (a full count: for admin pages, not hot paths). */
  counts(): Promise<Record<OutboxStatus, number>> {
    return this.store.countByStatus();
  }

  /** How many dead messages `filter` hits (what a requeue or purge with it would act on now). */
  async countDead(filter: OutboxDeadLetterFilter): Promise<number> {
    return this.store.countDead(criteriaOf(filter));
  }

  /**
   * Puts the dead messages `filter` hits back to pending (attempts reset, due now; failure
   * history and last error kept) in batches of 500 (`DEAD_LETTER_BATCH`), each its own short
   * statement, and wakes the relay of this process. Each dead row is visited once (keyset by
   * sequence), so a message that fails again meanwhile is not re-queued twice. Returns how many.
   */
  async requeueDead(filter: OutboxDeadLetterFilter): Promise<number> {
    const n = await this.inBatches(criteriaOf(filter), (seqs) => this.store.requeueDeadSeqs(seqs));
    if (n > 0) this.signal.notify();
    return n;
  }

  /** Deletes the dead messages `filter` hits for good, in batches like {@link requeueDead}; returns how many. */
  async purgeDeadWhere(filter: OutboxDeadLetterFilter): Promise<number> {
    return this.inBatches(criteriaOf(filter), (seqs) => this.store.purgeDeadSeqs(seqs));
  }

  private async inBatches(
    filter: OutboxDeadFilter,
    act: (seqs: string[]) => Promise<number>,
  ): Promise<number> {
    let total = 0;
    let afterSeq: string | undefined;
    for (;;) {
      const seqs = await this.store.deadSeqs(filter, afterSeq, DEAD_LETTER_BATCH);
      if (!seqs.length) return total;
      total += await act(seqs);
      if (seqs.length < DEAD_LETTER_BATCH) return total;
      afterSeq = seqs[seqs.length - 1];
    }
  }
}

/** The store's criteria of a filter; refuses one with none unless `all` is set. */
function criteriaOf(f: OutboxDeadLetterFilter): OutboxDeadFilter {
  const c: OutboxDeadFilter = {};
  if (f.type !== undefined) c.type = f.type;
  if (f.partitionKey !== undefined) c.partitionKey = f.partitionKey;
  if (f.failedAfter !== undefined) c.failedAfter = f.failedAfter;
  if (f.failedBefore !== undefined) c.failedBefore = f.failedBefore;
  if (f.errorContains !== undefined && f.errorContains !== '') c.errorContains = f.errorContains;
  if (Object.keys(c).length === 0 && f.all !== true) throw new OutboxDeadFilterRequiredError();
  for (const d of [c.failedAfter, c.failedBefore]) {
    if (d !== undefined && !(d instanceof Date && !isNaN(d.getTime()))) {
      throw new OutboxDeadFilterRequiredError('failedAfter and failedBefore must be valid Dates');
    }
  }
  return c;
}

function parse(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function toEntry(r: OutboxRow): OutboxEntry {
  const headers = parse(r.headers);
  return {
    seq: r.seq,
    id: r.id,
    type: r.type,
    status: r.status,
    partitionKey: r.partitionKey,
    attempts: r.attempts,
    payload: parse(r.payload),
    headers: headers && typeof headers === 'object' ? (headers as Record<string, string>) : {},
    lastError: r.lastError,
    nextAttemptAt: r.nextAttemptAt,
    leaseOwner: r.leaseOwner,
    lockedUntil: r.lockedUntil,
    createdAt: r.createdAt,
    sentAt: r.sentAt,
    failures: parseFailures(r.failures),
    failedAt: r.failedAt,
    route: r.route ?? DEFAULT_ROUTE,
  };
}
