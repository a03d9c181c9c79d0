import type { LoggerService } from '@nestjs/common';
import { ClsServiceManager } from 'nestjs-cls';
import type { DataSource, QueryRunner } from 'typeorm';
import type { StrayWritesPolicy } from './stray-writes.options';
import { IdempotencyMisconfiguredError } from './database-misconfigured';
import { STRAY_WRITE_REFUSED, STRAY_WRITE_SEEN } from './persistence.messages';

/** CLS key of the watch of the handler running in this async context. */
const WATCH = Symbol('nestjs-exactly-once:stray-write-watch');
const HOOKED = Symbol('nestjs-exactly-once:stray-write-hook');

/** One guarded run (an @Idempotent() handler, an inbox consumer): its transaction and what it saw. */
export class StrayWriteWatch {
  /** The kind of the first write seen outside the transaction (INSERT, UPDATE…). */
  stray: string | undefined;
  constructor(
    readonly dataSource: DataSource,
    readonly runner: QueryRunner,
    readonly policy: 'error' | 'warn',
    readonly where: string,
    readonly detector: StrayWriteDetector,
  ) {}
}

/**
 * Catches writes that escape the transaction of a guarded handler: an INSERT, UPDATE, DELETE,
 * MERGE, REPLACE or UPSERT (or the BEGIN of a transaction of its own, e.g. `repository.save()`)
 * issued on the same DataSource through another query runner than the transaction's (an `@InjectRepository()` repository, `dataSource.manager`, `dataSource.query()`,
 * a transaction of its own). Such a write commits on its own: it stays when the request rolls
 * back, and a retry of the request runs it again.
 *
 * How: every query runner the DataSource creates gets a `query` that, for a write statement only,
 * looks up the watch of the current async context (one nestjs-cls lookup). The gate and the
 * inbox set a watch inside their transaction's own CLS context for the handler's duration, so
 * the library's statements outside that transaction (leased-mode reservation, lease renewals,
 * release, relay, cleanup) run where no watch is set and are never flagged.
 * - `error`: the statement is refused before it runs (an IdempotencyMisconfiguredError), and the
 *   run fails at its end even when the handler caught that error: the request rolls back and
 *   answers 500 `…:misconfigured`.
 * - `warn`: the statement runs; one warning per handler (route or consumer) per process.
 * Runners created before the DataSource was hooked, or by another DataSource, are not watched.
 * @internal
 */
export class StrayWriteDetector {
  private readonly warned = new Set<string>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly logger: LoggerService | undefined,
  ) {
    hook(dataSource);
  }

  /**
   * Starts watching the handler about to run in the current transaction (`runner`). Call inside
   * the transaction's callback. Returns undefined under `ignore` or when there is nothing to watch.
   */
  watch(
    policy: StrayWritesPolicy,
    runner: QueryRunner | undefined,
    where: string,
  ): StrayWriteWatch | undefined {
    if (policy === 'ignore' || !runner) return undefined;
    const cls = ClsServiceManager.getClsService();
    if (!cls.isActive()) return undefined;
    const watch = new StrayWriteWatch(this.dataSource, runner, policy, where, this);
    cls.set(WATCH as any, watch);
    return watch;
  }

  /**
   * Ends a watch at the end of the handler. Throws the configuration error when a write escaped
   * under `error` (also when the handler caught the error of the refused statement).
   */
  end(watch: StrayWriteWatch | undefined): void {
    if (!watch) return;
    const cls = ClsServiceManager.getClsService();
    if (cls.isActive() && cls.get(WATCH as any) === watch) cls.set(WATCH as any, undefined);
    if (watch.policy === 'error' && watch.stray) {
      throw new IdempotencyMisconfiguredError(STRAY_WRITE_REFUSED(watch.stray, watch.where));
    }
  }

  /** A write ran (or was about to run) outside the watched transaction. */
  seen(watch: StrayWriteWatch, kind: string): void {
    watch.stray ??= kind;
    if (watch.policy === 'error') {
      throw new IdempotencyMisconfiguredError(STRAY_WRITE_REFUSED(kind, watch.where));
    }
    if (this.warned.has(watch.where)) return;
    this.warned.add(watch.where);
    this.logger?.warn(STRAY_WRITE_SEEN(kind, watch.where));
  }
}

/** Gives every query runner the DataSource creates from now on the stray-write check (once per DataSource). */
function hook(dataSource: DataSource): void {
  const driver = dataSource.driver as any;
  if (driver[HOOKED]) return;
  driver[HOOKED] = true;
  const create = driver.createQueryRunner.bind(driver) as (mode: string) => QueryRunner;
  const cls = ClsServiceManager.getClsService();
  driver.createQueryRunner = (mode: string) => {
    const runner = create(mode) as any;
    if (runner[HOOKED]) return runner;
    runner[HOOKED] = true;
    /** The watch of a handler running now that this runner is not the transaction of, if any. */
    const strayFor = (): StrayWriteWatch | undefined => {
      if (!cls.isActive()) return undefined;
      const watch = cls.get(WATCH as any) as StrayWriteWatch | undefined;
      return watch && watch.runner !== runner && watch.dataSource === dataSource
        ? watch
        : undefined;
    };
    /** Throws under `error` when a watched handler uses this runner (not its transaction's). */
    const check = (kind: string): void => {
      const watch = strayFor();
      if (watch) watch.detector.seen(watch, kind);
    };
    const query = runner.query as (...args: unknown[]) => Promise<unknown>;
    runner.query = function (this: unknown, sql: string, ...rest: unknown[]) {
      // The statement is classified only when it could be a stray write: not for the statements
      // of a watched handler's own transaction, nor where no handler is watched (every other
      // query of the app).
      const watch = strayFor();
      const kind = watch && typeof sql === 'string' ? writeKind(sql) : undefined;
      if (watch && kind) {
        try {
          watch.detector.seen(watch, kind);
        } catch (e) {
          return Promise.reject(e);
        }
      }
      return query.call(this, sql, ...rest);
    };
    // A transaction of its own (repository.save(), dataSource.transaction()) is outside the
    // request's too; refused at its BEGIN, before it waits on SQLite's one connection for the
    // request's transaction to end.
    const startTransaction = runner.startTransaction as (...args: unknown[]) => Promise<void>;
    runner.startTransaction = function (this: unknown, ...args: unknown[]) {
      try {
        check('BEGIN');
      } catch (e) {
        return Promise.reject(e);
      }
      return startTransaction.apply(this, args);
    };
    return runner;
  };
}

const LEADING_WORD = /^(?:\s|\(|\/\*[\s\S]*?\*\/|--[^\n]*(?:\n|$))*([A-Za-z]+)/;
const WRITES = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE', 'REPLACE', 'UPSERT']);
/** A write keyword inside a statement that starts with WITH (a CTE) or DECLARE (T-SQL batches). */
const INNER_WRITE =
  /\b(INSERT|DELETE|MERGE|UPSERT)\b|(?<!\bFOR\s+)(?<!\bDO\s+)\bUPDATE\b(?!\s*\()|\bREPLACE\b(?!\s*\()/i;

/** The kind of write a statement is (INSERT, UPDATE, …), or undefined for anything else. */
export function writeKind(sql: string): string | undefined {
  const word = LEADING_WORD.exec(sql)?.[1]?.toUpperCase();
  if (!word) return undefined;
  if (WRITES.has(word)) return word;
  if (word !== 'WITH' && word !== 'DECLARE') return undefined;
  const inner = INNER_WRITE.exec(sql.replace(/'(?:[^']|'')*'/g, "''"));
  return inner ? (inner[1] ?? /^\w+/.exec(inner[0])![0]).toUpperCase() : undefined;
}
