import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type {
  OutboxClaimParams,
  OutboxDeadFilter,
  OutboxFailureParams,
  OutboxInsert,
  OutboxListParams,
  OutboxRow,
  OutboxSql,
  OutboxStatus,
  OutboxTransactionRunner,
} from '../persistence/dialects';
import { DatabaseService } from '../persistence/database.service';

/**
 * The outbox's way to SQL: the dialect's outbox statements on the right executor. Messages are
 * added in the caller's transaction; the relay's and the admin's statements run on their own
 * (autocommit), outside any ambient transaction, and a claim that needs one (MySQL) gets a
 * short transaction of its own at the dialect's isolation level.
 * @internal
 */
@Injectable()
export class OutboxStore {
  constructor(private readonly db: DatabaseService) {}

  /** Inserts messages in the transaction of `manager` (autocommit when it has none). */
  insert(manager: EntityManager, rows: readonly OutboxInsert[]): Promise<void> {
    return this.sql.insert(this.db.exec(manager), rows);
  }

  /**
   * Locks the key-lock slots of the rows' partition keys, then inserts the rows, in the
   * transaction of `manager` (the before-commit step of an ordered transaction).
   */
  async insertOrdered(
    manager: EntityManager,
    slots: readonly number[],
    rows: readonly OutboxInsert[],
  ): Promise<void> {
    const exec = this.db.exec(manager);
    await this.sql.lockKeySlots(exec, slots);
    await this.sql.insert(exec, rows);
  }

  claim(p: OutboxClaimParams): Promise<OutboxRow[]> {
    const inOwnTransaction: OutboxTransactionRunner = (fn) => this.db.inOwnTransaction(fn);
    return this.sql.claim(this.db.autocommit(), inOwnTransaction, p);
  }

  markSent(seqs: readonly string[], owner: string): Promise<number> {
    return this.sql.markSent(this.db.autocommit(), seqs, owner);
  }

  markFailed(p: OutboxFailureParams): Promise<boolean> {
    return this.sql.markFailed(this.db.autocommit(), p);
  }

  release(seqs: readonly string[], owner: string, error?: string): Promise<number> {
    return this.sql.release(this.db.autocommit(), seqs, owner, error);
  }

  list(p: OutboxListParams): Promise<OutboxRow[]> {
    return this.sql.list(this.db.autocommit(), p);
  }

  findByIds(ids: readonly string[]): Promise<OutboxRow[]> {
    return this.sql.findByIds(this.db.autocommit(), ids);
  }

  requeue(ids: readonly string[]): Promise<number> {
    return this.sql.requeue(this.db.autocommit(), ids);
  }

  purgeDead(ids: readonly string[]): Promise<number> {
    return this.sql.purgeDead(this.db.autocommit(), ids);
  }

  countByStatus(): Promise<Record<OutboxStatus, number>> {
    return this.sql.countByStatus(this.db.autocommit());
  }

  countDead(filter: OutboxDeadFilter): Promise<number> {
    return this.sql.countDead(this.db.autocommit(), filter);
  }

  deadSeqs(
    filter: OutboxDeadFilter,
    afterSeq: string | undefined,
    limit: number,
  ): Promise<string[]> {
    return this.sql.deadSeqs(this.db.autocommit(), filter, afterSeq, limit);
  }

  requeueDeadSeqs(seqs: readonly string[]): Promise<number> {
    return this.sql.requeueDeadSeqs(this.db.autocommit(), seqs);
  }

  purgeDeadSeqs(seqs: readonly string[]): Promise<number> {
    return this.sql.purgeDeadSeqs(this.db.autocommit(), seqs);
  }

  pendingByRoute(): Promise<Record<string, number>> {
    return this.sql.pendingByRoute(this.db.autocommit());
  }

  private get sql(): OutboxSql {
    return this.db.dialect.outbox;
  }
}
