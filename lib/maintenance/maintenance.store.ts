import { Injectable } from '@nestjs/common';
import type {
  CleanupSql,
  IdempotencyRecordTimes,
  IdempotencyRow,
  InboxListParams,
  InboxRow,
  InboxStatusCount,
  OutboxHealthRow,
  OutboxSentPerMinute,
} from '../persistence/dialects';
import { DatabaseService } from '../persistence/database.service';
import { ReplayCache } from '../persistence/replay.cache';
import type { SqlExecutor } from '../persistence/sql-executor';
import type { ReencryptTarget } from '../encryption/reencrypt-stored-answers';

/**
 * Maintenance's way to SQL (cleanup, health, backlog gauges, admin look-ups): every statement
 * runs outside any ambient transaction, on its own (autocommit) or, for cleanup where the
 * dialect asks for it, in a short transaction of its own.
 * @internal
 */
@Injectable()
export class MaintenanceStore {
  constructor(
    private readonly db: DatabaseService,
    private readonly replayCache: ReplayCache,
  ) {}

  /** The dialect's retention statements (CleanupService's overridable `sql`). */
  get cleanup(): CleanupSql {
    return this.db.dialect.cleanup;
  }

  /**
   * Runs one cleanup statement: autocommit on a pooled connection, or a short transaction of its
   * own where the dialect's cleanup names an isolation level or a prelude.
   */
  inCleanupTransaction<T>(
    sql: Pick<CleanupSql, 'isolation' | 'prelude'>,
    fn: (exec: SqlExecutor) => Promise<T>,
  ): Promise<T> {
    const { isolation, prelude } = sql;
    if (!isolation && !prelude?.length) return fn(this.db.autocommit());
    return this.db.inOwnTransaction(fn, { isolation: isolation ?? 'default', prelude });
  }

  /** Outbox backlog figures (health indicator, gauges). */
  outboxHealth(): Promise<OutboxHealthRow> {
    return this.db.dialect.health.outboxHealth(this.db.autocommit());
  }

  /** An idempotency record by scope and key (admin inspection). */
  findIdempotencyRecord(scope: string, key: string): Promise<IdempotencyRow | undefined> {
    return this.db.dialect.idempotency.find(this.db.autocommit(), scope, key);
  }

  /**
   * Deletes an idempotency record by scope and key (admin eviction); how many rows went. This
   * process' replay cache forgets the key before and after the statement (a replay read between
   * the two must not keep the deleted answer), and the shared tier's entry is deleted after it
   * (a failure there fails the eviction, which can be repeated).
   */
  async evictIdempotencyRecord(scope: string, key: string): Promise<number> {
    this.replayCache.delete(scope, key);
    try {
      return await this.db.dialect.idempotency.evict(this.db.autocommit(), scope, key);
    } finally {
      this.replayCache.delete(scope, key);
      await this.replayCache.deleteShared(scope, key);
    }
  }

  /** After a cleanup run: the replay cache drops the answers whose lifetime is over. */
  forgetExpiredAnswers(): void {
    this.replayCache.prune();
  }

  /**
   * The re-encryption job's reads and compare-and-set rewrites, in autocommit; after each
   * rewrite this process' replay cache and the shared tier forget the record (they hold the
   * answer as it was stored, under the old key).
   */
  reencryptTarget(): ReencryptTarget {
    return {
      exec: this.db.autocommit(),
      sql: this.db.dialect.answers,
      rewritten: async (row) => {
        this.replayCache.delete(row.scope, row.key);
        await this.replayCache.deleteShared(row.scope, row.key);
      },
    };
  }

  /** Created, completed and expiry times of an idempotency record (admin inspection). */
  idempotencyTimes(scope: string, key: string): Promise<IdempotencyRecordTimes | undefined> {
    return this.db.dialect.console.idempotencyTimes(this.db.autocommit(), scope, key);
  }

  /** Inbox records, newest received first (admin console). */
  listInbox(p: InboxListParams): Promise<InboxRow[]> {
    return this.db.dialect.console.inboxList(this.db.autocommit(), p);
  }

  /** One inbox record (admin reset). */
  findInboxRecord(consumer: string, messageId: string): Promise<InboxRow | undefined> {
    return this.db.dialect.inbox.find(this.db.autocommit(), consumer, messageId);
  }

  /** Deletes an inbox record unless it is processed, in one statement (admin reset); rows deleted. */
  resetInboxRecord(consumer: string, messageId: string): Promise<number> {
    return this.db.dialect.inbox.removeUnprocessed(this.db.autocommit(), consumer, messageId);
  }

  /** Inbox records per consumer and status (admin console). */
  inboxCounts(): Promise<InboxStatusCount[]> {
    return this.db.dialect.console.inboxCounts(this.db.autocommit());
  }

  /** Outbox messages sent per minute over the last `minutes` minutes (admin console). */
  outboxSentPerMinute(minutes: number): Promise<OutboxSentPerMinute[]> {
    return this.db.dialect.console.outboxSentPerMinute(this.db.autocommit(), minutes);
  }
}
