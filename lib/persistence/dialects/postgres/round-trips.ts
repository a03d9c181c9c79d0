import { ClsServiceManager } from 'nestjs-cls';
import type { DataSource, QueryRunner } from 'typeorm';

/*
 * PostgreSQL, node-postgres: the gate's transaction in three round trips instead of five.
 *
 * A guarded first execution runs START TRANSACTION, the claim, the handler's statements, the
 * completed record and COMMIT. TypeORM (through nestjs-cls) sends START TRANSACTION and COMMIT
 * as statements of their own, each one round trip; the claim and the completion are the gate's
 * named prepared statements. The extended query protocol lets a client send several statements
 * before one Sync, and the server runs them in order, skipping everything after an error up to
 * the Sync. So:
 *  - the START TRANSACTION of a transaction the gate opens is held back (no round trip) and sent
 *    in front of the transaction's first prepared statement (the claim), before the same Sync;
 *  - the COMMIT is sent behind the completed record's INSERT, before the same Sync: when the
 *    INSERT fails (another request's record got there first: unique violation) the server skips
 *    the COMMIT and the transaction is rolled back as before; when it succeeds, the COMMIT TypeORM
 *    sends next is answered here without a round trip.
 * Statements are the same, in the same order, in the same transaction: only the waits between
 * them go. Anything else that runs on the runner while the START TRANSACTION is held back (a
 * TypeORM subscriber, a statement of the handler) sends it first. Not used (the usual five round
 * trips) with pg-native, under an isolation level other than the default, when a TypeORM
 * subscriber listens to beforeTransactionCommit (it must run before the COMMIT), or on a
 * connection that has not yet prepared the statement (its first use prepares it as usual).
 * @internal
 */

/** What a transaction the gate opens holds back. */
interface RunnerState {
  /** START TRANSACTION asked for and not yet sent. */
  beginHeld: boolean;
  /** COMMIT already sent with the completion: TypeORM's own COMMIT is answered here. */
  committed: boolean;
  /** Whether the COMMIT may ride with the completion (no beforeTransactionCommit subscriber). */
  commitWithLast: boolean;
}

/** The one-shot arming of the next START TRANSACTION in this async context. */
interface Arming {
  armed: boolean;
  commitWithLast: boolean;
}

/**
 * The arming lives in the request's CLS context (nestjs-cls), which the gate's transaction runs
 * in, rather than in an AsyncLocalStorage of its own: each AsyncLocalStorage in use costs every
 * promise and async resource of the process a store of its own.
 */
const ARMING = Symbol('nestjs-exactly-once:pg-held-begin');
const currentArming = (): Arming | undefined =>
  ClsServiceManager.getClsService().get(ARMING) as Arming | undefined;
const states = new WeakMap<QueryRunner, RunnerState>();
const HOOKED = Symbol('nestjs-exactly-once:pg-round-trips');

type QueryFn = (this: QueryRunner, sql: string, ...rest: unknown[]) => Promise<unknown>;

/**
 * Installs the holding of START TRANSACTION / COMMIT on every query runner the DataSource creates
 * from now on (once per DataSource). Returns false where it cannot apply (not node-postgres, or
 * pg-native, or an isolation level set on the DataSource).
 */
export function installPgRoundTrips(dataSource: DataSource): boolean {
  const driver = dataSource.driver as any;
  if (dataSource.options.type !== 'postgres') return false;
  if ((dataSource.options as any).native || !speaksExtendedProtocol(driver.postgres?.Query)) {
    return false;
  }
  if (dataSource.options.isolationLevel) return false;
  if (driver[HOOKED]) return true;
  driver[HOOKED] = true;
  const create = driver.createQueryRunner.bind(driver) as (mode: string) => QueryRunner;
  driver.createQueryRunner = (mode: string) => {
    const runner = create(mode) as QueryRunner & Record<symbol, unknown>;
    if (runner[HOOKED]) return runner;
    runner[HOOKED] = true;
    const query = runner.query as unknown as QueryFn;
    (runner as any).query = async function (this: QueryRunner, sql: string, ...rest: unknown[]) {
      const state = states.get(runner);
      if (state) {
        if (sql === 'START TRANSACTION' && !state.beginHeld && !state.committed) {
          const a = currentArming();
          if (a?.armed) {
            a.armed = false;
            state.beginHeld = true;
            state.commitWithLast = a.commitWithLast;
            return undefined;
          }
        } else if (sql === 'COMMIT' || sql === 'ROLLBACK') {
          // Nothing was sent (held back) or the COMMIT already went with the completion: the
          // transaction has ended. (A ROLLBACK after that commit cannot undo it: the completed
          // record stands, and a retry gets its replay.)
          if (state.beginHeld || state.committed) {
            state.beginHeld = false;
            state.committed = false;
            return undefined;
          }
        } else if (state.committed) {
          throw new Error(
            `nestjs-exactly-once: a statement after the transaction's COMMIT on the same runner: ${sql.slice(0, 60)}`,
          );
        } else if (state.beginHeld) {
          state.beginHeld = false;
          await query.call(this, 'START TRANSACTION');
        }
      } else if (sql === 'START TRANSACTION') {
        const a = currentArming();
        if (a?.armed) {
          a.armed = false;
          states.set(runner, {
            beginHeld: true,
            committed: false,
            commitWithLast: a.commitWithLast,
          });
          return undefined;
        }
      }
      return query.call(this, sql, ...rest);
    };
    return runner;
  };
  return true;
}

/**
 * node-postgres's JavaScript Query as this module drives it (pg 8): `submit` calls `prepare`,
 * which ends with `_getRows` (Execute, then Sync). Anything else keeps the usual round trips.
 */
function speaksExtendedProtocol(Query: any): boolean {
  const p = Query?.prototype;
  return (
    typeof Query === 'function' &&
    typeof p?.submit === 'function' &&
    typeof p.prepare === 'function' &&
    typeof p._getRows === 'function' &&
    /this\.prepare\(/.test(String(p.submit))
  );
}

/**
 * Runs `fn` (which opens a transaction) with its START TRANSACTION held back for the first
 * prepared statement, and its COMMIT allowed to ride with the last one (see runPreparedWith).
 */
export async function withHeldBegin<T>(dataSource: DataSource, fn: () => Promise<T>): Promise<T> {
  const cls = ClsServiceManager.getClsService();
  // Without a CLS context there is no ambient transaction either: the usual round trips.
  if (!cls.isActive()) return fn();
  const commitWithLast = !dataSource.subscribers.some(
    (s) => typeof (s as any).beforeTransactionCommit === 'function',
  );
  const a: Arming = { armed: true, commitWithLast };
  cls.set(ARMING, a);
  try {
    return await fn();
  } finally {
    // Consumed by the transaction's START TRANSACTION; never by a later one of this context.
    a.armed = false;
  }
}

/**
 * The transaction of `runner` must send its own COMMIT (not ride with the gate's completion):
 * something runs right before it (the outbox's ordered messages, see OutboxService). A no-op on
 * a runner this module does not hold anything for.
 */
export function holdCommit(runner: QueryRunner): void {
  const state = states.get(runner);
  if (state) state.commitWithLast = false;
}

/** The pg client's wire connection, when it is node-postgres's JavaScript client. */
function wireOf(client: any): any {
  const c = client?.connection;
  return c && typeof c.parse === 'function' && c.parsedStatements ? c : undefined;
}

/**
 * Runs one named prepared statement on `runner`'s pg client, with the held-back START
 * TRANSACTION in front of it, and, when `last` (the transaction's last statement, which fails
 * rather than returns nothing when the transaction must not commit), the COMMIT behind it, in one
 * round trip. Returns undefined when neither applies (the caller runs the statement as usual;
 * a held START TRANSACTION has then been sent).
 */
export async function runPreparedWith(
  runner: QueryRunner,
  client: any,
  name: string,
  text: string,
  values: unknown[],
  last: boolean,
): Promise<{ rows: any[]; rowCount: number } | undefined> {
  const state = states.get(runner);
  if (!state) return undefined;
  const wire = wireOf(client);
  const parsed = wire !== undefined && wire.parsedStatements[name] === text;
  const prefix = state.beginHeld;
  const suffix = last && state.commitWithLast && !prefix && runner.isTransactionActive;
  if (!parsed || (!prefix && !suffix)) {
    if (state.beginHeld) {
      state.beginHeld = false;
      await (runner as any).query('START TRANSACTION');
    }
    return undefined;
  }
  state.beginHeld = false;
  const logger = runner.connection.logger;
  if (prefix) logger.logQuery('START TRANSACTION', [], runner);
  const Query = (runner.connection.driver as any).postgres.Query;
  const query = new Query({ name, text, values });
  const write = query.prepare.bind(query);
  // Inside the client's cork: the extra messages leave in the same write as the statement's.
  query.prepare = (connection: any) => {
    if (prefix) unnamed(connection, 'START TRANSACTION');
    write(connection);
  };
  if (suffix) {
    // The COMMIT right after the statement's Execute, before its Sync: pg's prepare ends with
    // _getRows (Execute, then Sync), which it never reaches when Bind failed on the client
    // (then it sends a Sync alone). Overridden on this query object only (it reads every row:
    // no portal suspends, so pg calls it once).
    query._getRows = (connection: any) => {
      connection.execute({ portal: query.portal, rows: 0 });
      unnamed(connection, 'COMMIT');
      connection.sync();
    };
  }
  const results: any = await new Promise((resolve, reject) => {
    query.callback = (err: unknown, res: unknown) => (err ? reject(err) : resolve(res));
    client.query(query);
  });
  if (suffix) {
    state.committed = true;
    logger.logQuery('COMMIT', [], runner);
  }
  const all = Array.isArray(results) ? results : [results];
  const mine = prefix ? all[all.length - 1] : all[0];
  return { rows: mine?.rows ?? [], rowCount: mine?.rowCount ?? 0 };
}

/** Parse, Bind and Execute of an unnamed statement without parameters (no Sync). */
function unnamed(connection: any, text: string): void {
  connection.parse({ text, name: '', types: [] });
  connection.bind({ portal: '', statement: '', values: [] });
  connection.execute({ portal: '', rows: 0 });
}
