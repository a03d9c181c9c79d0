import { DEFAULT_ROUTE } from './outbox-routing.options';
import { Injectable } from '@nestjs/common';
import type { OutboxRow, OutboxStatus } from '../persistence/dialects';
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
  /** The publisher it is routed to (fixed when it was added; `default` for the `outbox.publisher` option). */
  route: string;
}

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
    route: r.route ?? DEFAULT_ROUTE,
  };
}
