import { EventSubscriber, type AfterQueryEvent, type EntitySubscriberInterface } from 'typeorm';

/** Execution times (ms) of the cleanup DELETE statements, as the driver measured them (after pool checkout). */
export const cleanupStatementTimes: number[] = [];

/**
 * A TypeORM subscriber that records the execution time of every cleanup DELETE on the ledger:
 * from sending the statement to its result on a connection already checked out of the pool.
 */
@EventSubscriber()
export class CleanupStatementTimer implements EntitySubscriberInterface {
  afterQuery(event: AfterQueryEvent): void {
    if (
      event.success &&
      event.executionTime !== undefined &&
      /DELETE FROM "idempotency_records"\s+WHERE ctid/.test(event.query)
    ) {
      cleanupStatementTimes.push(event.executionTime);
    }
  }
}
