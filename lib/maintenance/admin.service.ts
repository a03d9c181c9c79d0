import { Inject, Injectable } from '@nestjs/common';
import { ENVELOPE_V1, envelopeHeader } from '../encryption/answer-envelope';
import { LEGACY_KEY_ID } from '../encryption/key-ring';
import {
  reencryptWith,
  type ReencryptOptions,
  type ReencryptReport,
} from '../encryption/reencrypt-stored-answers';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { REENCRYPT_NO_RING } from './maintenance.messages';
import { MaintenanceStore } from './maintenance.store';
import { keyHashOf } from '../gate/idempotency-context';
import { buildScope } from '../gate/request-scope';
import {
  OutboxAdminService,
  type OutboxDeadLetterFilter,
  type OutboxEntry,
  type OutboxListFilter,
} from '../outbox/outbox-admin.service';
import type { InboxRow, InboxStatus, OutboxStatus } from '../persistence/dialects';

/** Statuses an outbox message can have. */
export const OUTBOX_STATUSES: readonly OutboxStatus[] = ['pending', 'sent', 'dead'];

/** Statuses an inbox record can have. */
export const INBOX_STATUSES: readonly InboxStatus[] = ['processed', 'retrying', 'failed'];

/** Minutes the overview's sent-per-minute series covers. */
export const THROUGHPUT_MINUTES = 15;

/** An inbox record as the admin API shows it. */
export type InboxEntry = InboxRow;

/** Which inbox records `IdempotencyAdminService` lists: by consumer and status, at most `limit`. */
export interface InboxListFilter {
  consumer?: string;
  status?: InboxStatus;
  /** At most this many (default 50, at most 1000). */
  limit?: number;
}

/** One consumer's inbox records by status. */
export interface InboxConsumerSummary {
  consumer: string;
  processed: number;
  retrying: number;
  failed: number;
}

/** What the console's first screen shows, in one read. */
export interface AdminOverview {
  outbox: {
    counts: Record<OutboxStatus, number>;
    /** Age of the oldest pending message on the database clock, in ms (0 when none). */
    oldestPendingAgeMs: number;
    /** Messages marked sent per minute, newest minute first (index 0: the last 60 seconds). */
    sentPerMinute: number[];
  };
  inbox: { consumers: InboxConsumerSummary[] };
}

/** `requeued`: pending again, attempts reset, due now (the relay of this process is woken). */
export type RequeueResult =
  | { outcome: 'requeued'; message: OutboxEntry }
  | { outcome: 'not-found' }
  | { outcome: 'not-requeueable'; status: OutboxStatus };

/**
 * `reset`: the record (as it was) is deleted, so the message's next delivery runs the handler
 * again; `not-resettable`: it is processed (a reset would run the handler a second time).
 */
export type InboxResetResult =
  | { outcome: 'reset'; record: InboxEntry }
  | { outcome: 'not-found' }
  | { outcome: 'not-resettable'; status: InboxStatus };

/** What purging one outbox message did: purged, not found, or not purgeable in its status. */
export type PurgeResult =
  | { outcome: 'purged' }
  | { outcome: 'not-found' }
  | { outcome: 'not-purgeable'; status: OutboxStatus };

/** Where an idempotency key lives: the stored scope string, or the parts the gate builds it from. */
export type IdempotencyScopeRef =
  | string
  | {
      /** Tenant as the tenant resolver returns it; `-` when none. */
      tenant?: string;
      /** Principal as the principal resolver returns it; `-` when none. */
      principal?: string;
      method: string;
      /** Route template, e.g. `/payments`. */
      route: string;
    };

/** What the ledger holds for one key (never the stored response body itself). */
export interface IdempotencyKeyView {
  scope: string;
  /** The short hash under which the key appears in logs. */
  keyHash: string;
  state: 'started' | 'completed';
  responseStatus: number | null;
  /** Stored response headers; null while started or when stored encrypted. */
  responseHeaders: Record<string, string> | null;
  /** The stored answer is sealed with the module's encryption key. */
  encrypted: boolean;
  /**
   * The id of the key the stored answer is sealed under (`default` for the envelope of the single
   * `encryptionKey`), or null when it is not encrypted: what a key rotation is waiting for.
   */
  keyId: string | null;
  /** Size of the stored (possibly encrypted) response body. */
  responseBodyBytes: number;
  /** Past its expiry: counts as absent and is deleted by cleanup. */
  expired: boolean;
  /** Milliseconds left on a started record's lease. */
  leaseRemainingMs: number;
  /** When the record was written (reserved), on the database clock. */
  createdAt: Date | null;
  /** When the answer was stored; null while started. */
  completedAt: Date | null;
  /** When the record stops counting (and cleanup deletes it). */
  expiresAt: Date | null;
}

/**
 * Operations API in one place: outbox messages by status or partition key, re-queue of dead or
 * sent ones, purge of dead ones (through the outbox's `OutboxAdminService`), and inspection or
 * eviction of an idempotency key by scope + key. Statements run outside any ambient transaction.
 * `IdempotencyAdminModule` mounts an HTTP API over it; or call it from your own (protected)
 * endpoints and scripts.
 */
@Injectable()
export class IdempotencyAdminService {
  constructor(
    private readonly store: MaintenanceStore,
    private readonly outbox: OutboxAdminService,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {}

  /**
   * The re-encryption job: rewrites the stored answers not sealed under the key ring's first key
   * (an older key, the single `encryptionKey`'s format, or plaintext under `acceptPlaintext`) in
   * batches, with a compare-and-set per record (a record written again meanwhile, or in flight,
   * is left alone); the replay caches forget each rewritten record. Resumable: pass the report's
   * `cursor` as `after`. Throws when no key ring is configured.
   */
  reencryptStoredAnswers(options: ReencryptOptions = {}): Promise<ReencryptReport> {
    const ring = this.options.encryption;
    if (!ring) throw new Error(REENCRYPT_NO_RING);
    return reencryptWith(this.store.reencryptTarget(), ring, options);
  }

  /** Messages in sequence order, filtered by status and/or partition key (keyset paging by `afterSeq`). */
  listOutbox(filter: OutboxListFilter = {}): Promise<OutboxEntry[]> {
    return this.outbox.list(filter);
  }

  /** One message with its payload, or undefined. */
  getOutboxMessage(id: string): Promise<OutboxEntry | undefined> {
    return this.outbox.get(id);
  }

  /** Puts a dead or sent message back to pending (attempts reset, due now); the relay publishes it again. */
  async requeueOutboxMessage(id: string): Promise<RequeueResult> {
    const before = await this.outbox.get(id);
    if (!before) return { outcome: 'not-found' };
    if (before.status === 'pending') return { outcome: 'not-requeueable', status: before.status };
    await this.outbox.requeue(id);
    const after = await this.outbox.get(id);
    return after ? { outcome: 'requeued', message: after } : { outcome: 'not-found' };
  }

  /** Re-queues every dead message (in pages of 500); returns how many. */
  requeueAllDead(): Promise<number> {
    return this.forEachDeadPage((ids) => this.outbox.requeue(ids));
  }

  /** Deletes one dead message for good. */
  async purgeDeadMessage(id: string): Promise<PurgeResult> {
    const row = await this.outbox.get(id);
    if (!row) return { outcome: 'not-found' };
    if (row.status !== 'dead') return { outcome: 'not-purgeable', status: row.status };
    const n = await this.outbox.purgeDead(id);
    return n === 1 ? { outcome: 'purged' } : { outcome: 'not-found' };
  }

  /** Deletes every dead message (in pages of 500); returns how many. */
  purgeAllDead(): Promise<number> {
    return this.forEachDeadPage((ids) => this.outbox.purgeDead(ids));
  }

  /** How many dead messages a filter hits (shown before a filtered requeue or purge). */
  countDeadOutbox(filter: OutboxDeadLetterFilter): Promise<number> {
    return this.outbox.countDead(filter);
  }

  /**
   * Re-queues the dead messages a filter hits (attempts reset, history kept), in short batches;
   * returns how many. A filter with no criterion needs `all: true`.
   */
  requeueDeadOutbox(filter: OutboxDeadLetterFilter): Promise<number> {
    return this.outbox.requeueDead(filter);
  }

  /** Deletes the dead messages a filter hits, in short batches; returns how many. */
  purgeDeadOutbox(filter: OutboxDeadLetterFilter): Promise<number> {
    return this.outbox.purgeDeadWhere(filter);
  }

  /** The ledger's record for a key (never its stored body), or undefined. */
  async inspectIdempotencyKey(
    scope: IdempotencyScopeRef,
    key: string,
  ): Promise<IdempotencyKeyView | undefined> {
    const s = scopeOf(scope);
    const row = await this.store.findIdempotencyRecord(s, key);
    if (!row) return undefined;
    const times = await this.store.idempotencyTimes(s, key);
    return {
      scope: s,
      keyHash: keyHashOf(s, key),
      state: row.state,
      responseStatus: row.responseStatus,
      ...storedHeaders(row.responseHeaders),
      keyId: sealedUnder(row.responseHeaders, row.responseBody),
      responseBodyBytes: row.responseBody?.length ?? 0,
      expired: row.expired,
      leaseRemainingMs: row.leaseRemainingMs,
      createdAt: times?.createdAt ?? null,
      completedAt: times?.completedAt ?? null,
      expiresAt: times?.expiresAt ?? null,
    };
  }

  /** Deletes a key's record: the next request with it runs the handler again. Returns whether one existed. */
  async evictIdempotencyKey(scope: IdempotencyScopeRef, key: string): Promise<boolean> {
    const n = await this.store.evictIdempotencyRecord(scopeOf(scope), key);
    return n > 0;
  }

  /** Inbox records, newest received first, by consumer and/or status. */
  listInbox(filter: InboxListFilter = {}): Promise<InboxEntry[]> {
    const limit = Math.min(1000, Math.max(1, Math.floor(filter.limit ?? 50)));
    return this.store.listInbox({ consumer: filter.consumer, status: filter.status, limit });
  }

  // ---- Inbox reset: poison → fix → replay (docs/inbox.md) ----

  /**
   * Deletes the inbox record of a failed (or retrying) message, so that its next delivery runs
   * the handler again: after the handler is fixed, reset the record, then deliver the message
   * again (`requeueOutboxMessage()` of its outbox message). A processed record is refused: the
   * DELETE itself checks the status, so a record that commits as processed meanwhile is kept.
   */
  async resetInboxRecord(consumer: string, messageId: string): Promise<InboxResetResult> {
    const before = await this.store.findInboxRecord(consumer, messageId);
    if (!before) return { outcome: 'not-found' };
    if (before.status === 'processed') return { outcome: 'not-resettable', status: 'processed' };
    if ((await this.store.resetInboxRecord(consumer, messageId)) === 1) {
      return { outcome: 'reset', record: before };
    }
    const now = await this.store.findInboxRecord(consumer, messageId);
    return now ? { outcome: 'not-resettable', status: now.status } : { outcome: 'not-found' };
  }

  /** Resets every failed inbox record (of one consumer, or of all), in pages of 500; returns how many. */
  async resetFailedInbox(consumer?: string): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await this.store.listInbox({ consumer, status: 'failed', limit: 500 });
      let reset = 0;
      for (const r of rows) reset += await this.store.resetInboxRecord(r.consumer, r.messageId);
      total += reset;
      if (rows.length < 500 || reset === 0) return total;
    }
  }

  /**
   * Outbox counts by status, the oldest pending message's age and messages sent per minute over
   * the last {@link THROUGHPUT_MINUTES} minutes; inbox records per consumer and status. Full
   * counts: for admin pages, not hot paths.
   */
  async overview(): Promise<AdminOverview> {
    const [counts, health, perMinute, inbox] = await Promise.all([
      this.outbox.counts(),
      this.store.outboxHealth(),
      this.store.outboxSentPerMinute(THROUGHPUT_MINUTES),
      this.store.inboxCounts(),
    ]);
    const sentPerMinute = new Array<number>(THROUGHPUT_MINUTES).fill(0);
    for (const b of perMinute) {
      if (b.minutesAgo >= 0 && b.minutesAgo < THROUGHPUT_MINUTES) {
        sentPerMinute[b.minutesAgo] += b.sent;
      }
    }
    const consumers = new Map<string, InboxConsumerSummary>();
    for (const c of inbox) {
      const entry = consumers.get(c.consumer) ?? {
        consumer: c.consumer,
        processed: 0,
        retrying: 0,
        failed: 0,
      };
      if (c.status in entry) entry[c.status] += c.count;
      consumers.set(c.consumer, entry);
    }
    return {
      outbox: { counts, oldestPendingAgeMs: health.oldestPendingAgeMs, sentPerMinute },
      inbox: { consumers: [...consumers.values()] },
    };
  }

  private async forEachDeadPage(fn: (ids: string[]) => Promise<number>): Promise<number> {
    let total = 0;
    let afterSeq: string | undefined;
    for (;;) {
      const rows = await this.outbox.list({ status: 'dead', afterSeq, limit: 500 });
      if (rows.length === 0) return total;
      total += await fn(rows.map((r) => r.id));
      afterSeq = rows[rows.length - 1].seq;
    }
  }
}

/** The scope string of a scope reference (the gate's `buildScope`). */
export function scopeOf(ref: IdempotencyScopeRef): string {
  if (typeof ref === 'string') return ref;
  return buildScope(ref.tenant ?? '-', ref.principal ?? '-', ref.method, ref.route);
}

/** The headers column of the ledger: `{"h": [[name, value], …]}`, or `{"encrypted": 2, "kid": …}` (1: before key rings). */
function storedHeaders(text: string | null): {
  responseHeaders: Record<string, string> | null;
  encrypted: boolean;
} {
  if (text === null) return { responseHeaders: null, encrypted: false };
  try {
    const meta = JSON.parse(text);
    if (meta?.encrypted) return { responseHeaders: null, encrypted: true };
    return {
      responseHeaders: Array.isArray(meta?.h) ? Object.fromEntries(meta.h) : null,
      encrypted: false,
    };
  } catch {
    return { responseHeaders: null, encrypted: false };
  }
}

/** The key id of a sealed answer (format 1 has none: it was the `default` key), or null. */
function sealedUnder(headers: string | null, body: Buffer | null): string | null {
  if (!storedHeaders(headers).encrypted) return null;
  const head = envelopeHeader(body);
  if (head?.version === ENVELOPE_V1) return LEGACY_KEY_ID;
  return head?.keyId ?? null;
}
