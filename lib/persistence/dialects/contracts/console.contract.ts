import type { SqlExecutor } from '../../sql-executor';
import type { InboxRow, InboxStatus } from './inbox.contract';

/** Which inbox records to list: newest received first. */
export interface InboxListParams {
  consumer?: string;
  status?: InboxStatus;
  limit: number;
}

/** Number of inbox records of one consumer in one status. */
export interface InboxStatusCount {
  consumer: string;
  status: InboxStatus;
  count: number;
}

/** Messages marked sent in one whole minute: `minutesAgo` 0 is the minute just past. */
export interface OutboxSentPerMinute {
  minutesAgo: number;
  sent: number;
}

/** The times of an idempotency record (on the database clock). */
export interface IdempotencyRecordTimes {
  createdAt: Date;
  completedAt: Date | null;
  expiresAt: Date;
}

/**
 * Read-only statements for the operator's console and the admin API's overview: never on a hot
 * path, bounded by a limit or a time window, and served by the existing indexes (the inbox's
 * received_at index, the outbox's partial/filtered sent_at index, the ledger's unique key).
 */
export interface ConsoleSql {
  /** Inbox records, newest received first, by consumer and/or status. */
  inboxList(exec: SqlExecutor, p: InboxListParams): Promise<InboxRow[]>;
  /** Inbox records per consumer and status (a full count: admin pages only). */
  inboxCounts(exec: SqlExecutor): Promise<InboxStatusCount[]>;
  /** Outbox messages marked sent per minute over the last `minutes` minutes (empty minutes absent). */
  outboxSentPerMinute(exec: SqlExecutor, minutes: number): Promise<OutboxSentPerMinute[]>;
  /** Created, completed and expiry times of a ledger record, or undefined. */
  idempotencyTimes(
    exec: SqlExecutor,
    scope: string,
    key: string,
  ): Promise<IdempotencyRecordTimes | undefined>;
}
