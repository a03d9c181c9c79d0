import type { SqlExecutor } from '../../sql-executor';

/** State of an inbox record: handled and committed, failed but retryable, or given up after `maxAttempts`. */
export type InboxStatus = 'processed' | 'retrying' | 'failed';

/** A row of the inbox as the dialects return it. */
export interface InboxRow {
  consumer: string;
  messageId: string;
  status: InboxStatus;
  /** Handler runs so far (failed ones, plus the one that committed). */
  attempts: number;
  receivedAt: Date;
  processedAt: Date | null;
  lastError: string | null;
}

/**
 * `claimed`: the record is ours in the current transaction (fresh, or a retrying one taken
 * over; `attempts` counts this run); `processed` / `failed`: a committed record already settles
 * the message (the handler must not run); `again`: the record changed under the claim (deleted
 * meanwhile), claim once more.
 */
export type InboxClaim =
  | { outcome: 'claimed'; attempts: number }
  | { outcome: 'processed'; attempts: number }
  | { outcome: 'failed'; attempts: number }
  | { outcome: 'again' };

/** Status and attempts of a record after a failed attempt was counted. */
export interface InboxFailureCount {
  status: InboxStatus;
  attempts: number;
}

/** Every inbox statement a dialect must provide. */
export interface InboxSql {
  /**
   * In the caller's transaction: records (consumer, message id) as processed. The insert is
   * guarded by the unique key and WAITS on another transaction's uncommitted record of the same
   * id (normal lock wait), so a concurrent duplicate sees the outcome of the first delivery.
   */
  claim(exec: SqlExecutor, consumer: string, messageId: string): Promise<InboxClaim>;
  /**
   * After the handler's transaction rolled back, in its own short transaction: counts one failed
   * attempt (status `failed` once `maxAttempts` is reached, else `retrying`). A record another
   * delivery has settled meanwhile is left alone and returned as it is.
   */
  recordFailure(
    exec: SqlExecutor,
    consumer: string,
    messageId: string,
    error: string,
    maxAttempts: number,
  ): Promise<InboxFailureCount>;
  find(exec: SqlExecutor, consumer: string, messageId: string): Promise<InboxRow | undefined>;
  /** Deletes one record (an operator lets a failed message run again). */
  remove(exec: SqlExecutor, consumer: string, messageId: string): Promise<number>;
  /**
   * Deletes one record unless it is `processed`, in one statement (the status is checked by the
   * DELETE itself, so a record that commits as processed meanwhile is kept): the admin reset of
   * a failed or retrying message. Returns the rows deleted (0 or 1).
   */
  removeUnprocessed(exec: SqlExecutor, consumer: string, messageId: string): Promise<number>;
  /** Errors after which the claim's transaction is gone and the whole attempt may be retried (deadlock victim, lock wait timeout). */
  isRetryable(error: unknown): boolean;
}
