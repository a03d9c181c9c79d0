import { Injectable } from '@nestjs/common';
import type { CompleteParams, IdempotencyRow, ReserveOutcome, ReserveParams } from './dialects';
import { DatabaseService } from './database.service';
import type { SqlExecutor } from './sql-executor';

/**
 * The idempotency ledger. Statements come from the dialect; this class adds the in-process
 * in-flight registry that stands in for row locks on SQLite (one writer, one connection).
 * @internal
 */
@Injectable()
export class IdempotencyStore {
  private readonly inFlight = new Map<string, symbol>();

  constructor(private readonly db: DatabaseService) {}

  private get sql() {
    return this.db.dialect.idempotency;
  }

  /**
   * SQLite only: whether a request holding a reservation for (scope, key) is running in this
   * process. On other databases the uncommitted reservation's lock (or advisory lock) does this
   * job. Replays never register, so concurrent replays of a completed key are never refused.
   */
  isInFlight(scope: string, key: string): boolean {
    return this.db.dialect.singleWriter && this.inFlight.has(`${scope}\u0000${key}`);
  }

  /** SQLite only: registers the request that has just reserved (scope, key); returns its ticket. */
  markInFlight(scope: string, key: string): symbol | undefined {
    if (!this.db.dialect.singleWriter) return undefined;
    const ticket = Symbol('in-flight');
    this.inFlight.set(`${scope}\u0000${key}`, ticket);
    return ticket;
  }

  /** Removes the registration, if it is still this request's. */
  leave(scope: string, key: string, ticket: symbol | undefined): void {
    if (!ticket) return;
    const id = `${scope}\u0000${key}`;
    if (this.inFlight.get(id) === ticket) this.inFlight.delete(id);
  }

  reserve(exec: SqlExecutor, p: ReserveParams): Promise<ReserveOutcome> {
    return this.sql.reserve(exec, p);
  }
  find(exec: SqlExecutor, scope: string, key: string): Promise<IdempotencyRow | undefined> {
    return this.sql.find(exec, scope, key);
  }
  takeOver(
    exec: SqlExecutor,
    id: string,
    expectedToken: string | null,
    p: ReserveParams,
  ): Promise<boolean> {
    return this.sql.takeOver(exec, id, expectedToken, p);
  }
  complete(exec: SqlExecutor, p: CompleteParams): Promise<boolean> {
    return this.sql.complete(exec, p);
  }
  renew(exec: SqlExecutor, id: string, leaseToken: string, leaseMs: number): Promise<boolean> {
    return this.sql.renew(exec, id, leaseToken, leaseMs);
  }
  release(exec: SqlExecutor, id: string, leaseToken: string): Promise<void> {
    return this.sql.release(exec, id, leaseToken);
  }
  evict(exec: SqlExecutor, scope: string, key: string): Promise<number> {
    return this.sql.evict(exec, scope, key);
  }
}
