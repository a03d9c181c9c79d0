import type { SqlExecutor } from '../../sql-executor';

/** A completed record's stored answer, as the re-encryption job reads and rewrites it. */
export interface StoredAnswerRow {
  id: string;
  scope: string;
  key: string;
  status: number;
  headers: string | null;
  body: Buffer | null;
}

/**
 * Statements of the stored-answer re-encryption job (`reencryptStoredAnswers`): a keyset page
 * of completed, unexpired records in id order, and a compare-and-set rewrite of one record's
 * answer. Both run in autocommit, outside any business transaction.
 */
export interface AnswersSql {
  /**
   * Completed, unexpired records with an id above `afterId` (from the first when undefined), in
   * id order, at most `limit`. Rows an in-flight transaction holds are not waited for (SQL
   * Server: READPAST; the others read the last committed version).
   */
  page(exec: SqlExecutor, afterId: string | undefined, limit: number): Promise<StoredAnswerRow[]>;
  /**
   * Replaces the headers and body of record `row.id` only if it is still completed with the
   * status, headers and body that were read (compare-and-set); whether it did.
   */
  rewrite(exec: SqlExecutor, row: StoredAnswerRow, headers: string, body: Buffer): Promise<boolean>;
}
