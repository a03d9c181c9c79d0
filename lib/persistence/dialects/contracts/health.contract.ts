import type { SqlExecutor } from '../../sql-executor';

/** The outbox figures the health indicator and the backlog gauges report. */
export interface OutboxHealthRow {
  /** Messages in status pending (due or not, leased or not). */
  pending: number;
  /** Age of the oldest pending message on the database clock, in ms (0 when none). */
  oldestPendingAgeMs: number;
  /** Messages in status dead. */
  dead: number;
}

/** Monitoring statements: cheap reads over the partial/filtered indexes, never blocking writers. */
export interface HealthSql {
  outboxHealth(exec: SqlExecutor): Promise<OutboxHealthRow>;
}
