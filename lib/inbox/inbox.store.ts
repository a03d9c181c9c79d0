import { Injectable } from '@nestjs/common';
import type { InboxClaim, InboxFailureCount, InboxRow, InboxSql } from '../persistence/dialects';
import { DatabaseService } from '../persistence/database.service';

/**
 * The inbox's way to SQL: the dialect's inbox statements on the right executor. The claim runs
 * in the ambient transaction (the handler's); a failed attempt is counted in a transaction of
 * its own; reads and resets run outside any transaction.
 * @internal
 */
@Injectable()
export class InboxStore {
  constructor(private readonly db: DatabaseService) {}

  /** A plain read never waits on an in-flight claim, so the redelivery look-up may run first. */
  get nonBlockingReads(): boolean {
    return this.db.dialect.nonBlockingReads;
  }

  /** Claims the message id in the ambient transaction. */
  claim(consumer: string, messageId: string): Promise<InboxClaim> {
    return this.sql.claim(this.db.exec(), consumer, messageId);
  }

  /** Counts a failed attempt in a transaction made ambient here (the handler's has rolled back). */
  recordFailure(
    consumer: string,
    messageId: string,
    error: string,
    maxAttempts: number,
  ): Promise<InboxFailureCount> {
    return this.db.inTransaction(() =>
      this.sql.recordFailure(this.db.exec(), consumer, messageId, error, maxAttempts),
    );
  }

  find(consumer: string, messageId: string): Promise<InboxRow | undefined> {
    return this.db.withoutTransaction(() => this.sql.find(this.db.exec(), consumer, messageId));
  }

  remove(consumer: string, messageId: string): Promise<number> {
    return this.db.withoutTransaction(() => this.sql.remove(this.db.exec(), consumer, messageId));
  }

  /** The statement's transaction is gone but the whole attempt may run again (deadlock, lock time-out). */
  isRetryable(error: unknown): boolean {
    return this.sql.isRetryable(error);
  }

  private get sql(): InboxSql {
    return this.db.dialect.inbox;
  }
}
