import { createHash } from 'node:crypto';
import { runPreparedWith } from './dialects/postgres/round-trips';
import {
  type EntityManager,
  QueryFailedError,
  type QueryRunner,
  QueryRunnerAlreadyReleasedError,
} from 'typeorm';

/** Rows and affected-row count of one statement (or T-SQL batch). */
export interface SqlResult {
  rows: any[];
  affected: number;
}

/** Per-statement hints. */
export interface SqlOptions {
  /**
   * PostgreSQL: run as a named prepared statement, so the server parses and plans it once per
   * connection instead of on every request. Only for statements whose text never varies (the hot
   * path of the gate). Ignored on other databases.
   */
  prepare?: boolean;
  /**
   * PostgreSQL, prepared: the last statement of a transaction the gate opened, one that fails
   * (rather than returns nothing) when the transaction must not commit; its COMMIT may then be
   * sent in the same round trip (see dialects/postgres/round-trips.ts).
   */
  last?: boolean;
}

/** Runs one parameterized statement; placeholders follow the dialect ($1, ?, @0). */
export type SqlExecutor = (
  sql: string,
  params?: unknown[],
  options?: SqlOptions,
) => Promise<SqlResult>;

/**
 * Runs raw SQL through a TypeORM EntityManager: inside its transaction when it has one
 * (`TransactionHost.tx` in a transaction), otherwise on a pooled connection.
 *
 * A manager bound to a query runner speaks for that runner's transaction only. When the runner
 * has been released under it (its connection was lost mid-transaction: TypeORM releases the
 * runner on the connection's error), the statement fails like any TypeORM call on a released
 * runner; it never runs on another pooled connection, where it would commit on its own, outside
 * the transaction it belongs to (found by the fault suite: an inbox record committed without its
 * handler's effects, a reservation committed in transactional mode).
 */
export function executorFor(manager: EntityManager, preparedStatements = true): SqlExecutor {
  const prepared = preparedStatements && manager.connection.options.type === 'postgres';
  return async (sql, params = [], options) => {
    const own: QueryRunner | undefined = manager.queryRunner;
    if (own?.isReleased) throw new QueryRunnerAlreadyReleasedError();
    const runner = own ?? manager.connection.createQueryRunner();
    try {
      if (prepared && options?.prepare) {
        return await runPrepared(runner, sql, params, options.last === true);
      }
      const result = await runner.query(sql, params as any[], true);
      return normalize(result);
    } finally {
      if (runner !== own) await runner.release();
    }
  };
}

function normalize(result: any): SqlResult {
  const records = result?.records;
  const raw = result?.raw;
  let rows: any[] = Array.isArray(records) ? records : [];
  let affected = typeof result?.affected === 'number' ? result.affected : 0;
  // mysql2 puts the ResultSetHeader in raw for writes.
  if (raw && !Array.isArray(raw) && typeof raw.affectedRows === 'number') {
    affected = raw.affectedRows;
    if (!rows.length && raw.insertId) rows = [{ insertId: raw.insertId }];
  }
  return { rows, affected };
}

const statementNames = new Map<string, string>();

/** A stable name per statement text (the pg client prepares it once per connection). */
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (!name) {
    name = `eo_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    statementNames.set(sql, name);
  }
  return name;
}

/**
 * Runs a named prepared statement on the runner's pg client (the transaction's, when it has one).
 * It goes through the DataSource's logger as TypeORM's own queries do (query log, errors, slow
 * queries), so an app's query logging shows the library's statements too.
 */
async function runPrepared(
  runner: QueryRunner,
  sql: string,
  params: unknown[],
  last: boolean,
): Promise<SqlResult> {
  const client = await runner.connect();
  const { logger, options } = runner.connection;
  const name = statementName(sql);
  // A START TRANSACTION held back for this statement, and the COMMIT of a last one, go with it.
  const coalesced = runPreparedWith(runner, client, name, sql, params, last);
  logger.logQuery(sql, params, runner);
  const started = Date.now();
  try {
    const res = (await coalesced) ?? (await client.query({ name, text: sql, values: params }));
    const elapsed = Date.now() - started;
    if (options.maxQueryExecutionTime && elapsed > options.maxQueryExecutionTime) {
      logger.logQuerySlow(elapsed, sql, params, runner);
    }
    return { rows: res.rows ?? [], affected: res.rowCount ?? 0 };
  } catch (e) {
    logger.logQueryError(e as Error, sql, params, runner);
    throw new QueryFailedError(sql, params as any[], e as Error);
  }
}
