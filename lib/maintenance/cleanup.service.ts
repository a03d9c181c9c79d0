import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import { MaintenanceStore } from './maintenance.store';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import type { CleanupBatch, CleanupSql } from '../persistence/dialects';
import type { SqlExecutor } from '../persistence/sql-executor';
import { retryWithJitter } from '../internal/jittered-retry';
import { CLEANUP_RUN_FAILED, CLEANUP_STATEMENT_FAILED } from './maintenance.messages';
import { LibraryLogger } from '../observability/library-logger';
import { MetricsService } from '../observability/metrics.service';

/** The tables retention cleanup works on. */
export type CleanupTable = 'idempotency' | 'outbox' | 'inbox';

/** What one cleanup run did. */
export interface CleanupReport {
  /** Rows deleted per table. */
  deleted: Record<CleanupTable, number>;
  /** DELETE statements issued. */
  statements: number;
  /** Most rows one statement deleted (never more than `cleanup.batchSize`). */
  largestBatch: number;
  durationMs: number;
  /** Time spent pausing between statements (the duty cycle). */
  pausedMs: number;
  /** Every table was caught up (its last statement deleted fewer rows than a batch). */
  caughtUp: boolean;
  /** Tables whose statement failed in this run, with the error. */
  errors: Partial<Record<CleanupTable, string>>;
}

/** Overrides for one manual run (tests, admin tooling, benchmarks). */
export interface CleanupRunOptions {
  batchSize?: number;
  timeBudgetMs?: number;
  dutyCycle?: number;
}

const TABLES: CleanupTable[] = ['idempotency', 'outbox', 'inbox'];

/**
 * Retention cleanup: deletes expired idempotency records (never a started one whose lease is
 * live), outbox messages sent longer ago than `cleanup.outboxRetentionMs` and inbox records older
 * than `cleanup.inboxRetentionMs`. Dead outbox messages stay until re-queued or purged.
 *
 * Each run issues bounded DELETE statements (`cleanup.batchSize` rows, ≤ 4,000) round-robin over
 * the tables until each is caught up or `cleanup.timeBudgetMs` is spent, so no statement holds
 * many locks or runs long, and pauses after each full batch so that statements take only
 * `cleanup.dutyCycle` of the run's time (the request path keeps the database to itself the rest
 * of the time). Rows other transactions hold are skipped (READPAST / SKIP LOCKED), so
 * every instance may run it. The loop is started at application bootstrap with the interval from
 * the module options (works with `forRootAsync`) and awaited at shutdown.
 */
@Injectable()
export class CleanupService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new LibraryLogger(this.options.logger, 'IdempotencyCleanup');
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<CleanupReport> | undefined;
  private stopped = false;
  private wakePause: (() => void) | undefined;
  private readonly lastErrors = new Map<CleanupTable, string>();
  /** Where each table's sweep stands (dialects that delete in time order), kept until it catches up. */
  private readonly cursors = new Map<CleanupTable, unknown>();

  constructor(
    private readonly store: MaintenanceStore,
    private readonly metrics: MetricsService,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {}

  /** Nest lifecycle hook: starts the cleanup loop, unless `cleanup.enabled` is false. */
  onApplicationBootstrap(): void {
    if (!this.options.cleanup.enabled) return;
    this.stopped = false;
    this.schedule();
  }

  /** Nest lifecycle hook: stops the loop and waits for a running pass to end. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.wakePause?.();
    await this.running?.catch(() => undefined);
  }

  /** Whether the periodic loop is scheduled in this process. */
  get isScheduled(): boolean {
    return this.timer !== undefined || (this.running !== undefined && !this.stopped);
  }

  /**
   * Runs cleanup once now (or joins the run in progress) and reports what it deleted.
   * Statement errors are reported per table, not thrown: the other tables still get cleaned.
   */
  runOnce(overrides: CleanupRunOptions = {}): Promise<CleanupReport> {
    if (!this.running) {
      this.running = this.run(overrides).finally(() => {
        this.running = undefined;
      });
    }
    return this.running;
  }

  /** The dialect's cleanup statements (override to add tables or change conditions). */
  protected get sql(): CleanupSql {
    return this.store.cleanup;
  }

  /** One bounded statement on one table (`from`: where the sweep stands, see CleanupBatch). */
  protected deleteBatch(
    table: CleanupTable,
    exec: SqlExecutor,
    limit: number,
    from?: unknown,
  ): Promise<CleanupBatch> {
    const c = this.options.cleanup;
    switch (table) {
      case 'idempotency':
        return this.sql.expiredIdempotency(exec, limit, from);
      case 'outbox':
        return this.sql.sentOutbox(exec, limit, c.outboxRetentionMs, from);
      case 'inbox':
        return this.sql.oldInbox(exec, limit, c.inboxRetentionMs, from);
    }
  }

  /** Delay before the next run: the interval with ±10 % jitter, so instances drift apart. */
  protected nextDelay(): number {
    const interval = this.options.cleanup.intervalMs;
    return Math.max(1, Math.round(interval * (0.9 + Math.random() * 0.2)));
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.runOnce()
        .catch((e) => this.logger.error(CLEANUP_RUN_FAILED(String(e?.message ?? e))))
        .finally(() => this.schedule());
    }, this.nextDelay());
    this.timer.unref?.();
  }

  private async run(overrides: CleanupRunOptions): Promise<CleanupReport> {
    const batchSize = Math.max(
      1,
      Math.min(4000, Math.floor(overrides.batchSize ?? this.options.cleanup.batchSize)),
    );
    const budget = overrides.timeBudgetMs ?? this.options.cleanup.timeBudgetMs;
    const duty = Math.min(1, Math.max(0.01, overrides.dutyCycle ?? this.options.cleanup.dutyCycle));
    const started = Date.now();
    const report: CleanupReport = {
      deleted: { idempotency: 0, outbox: 0, inbox: 0 },
      statements: 0,
      largestBatch: 0,
      durationMs: 0,
      pausedMs: 0,
      caughtUp: false,
      errors: {},
    };
    let pending = [...TABLES];
    // The first round always runs (one statement per table, whatever the budget): every run makes progress.
    for (
      let round = 0;
      pending.length > 0 && !this.stopped && (round === 0 || Date.now() - started < budget);
      round++
    ) {
      const next: CleanupTable[] = [];
      for (const table of pending) {
        if (this.stopped || (round > 0 && Date.now() - started >= budget)) {
          next.push(table);
          continue;
        }
        const t0 = performance.now();
        const n = await this.statement(table, batchSize, report);
        if (n === batchSize) {
          next.push(table);
          if (duty < 1) {
            report.pausedMs += await this.pause(
              ((performance.now() - t0) * (1 - duty)) / duty,
              started + budget,
            );
          }
        }
      }
      pending = next;
    }
    this.store.forgetExpiredAnswers();
    report.caughtUp = pending.length === 0 && Object.keys(report.errors).length === 0;
    report.durationMs = Date.now() - started;
    this.metrics.cleanupDuration.record(report.durationMs);
    this.logRun(report);
    return report;
  }

  /** Sleeps `ms` (not past `deadline`; cut short at shutdown); returns the time slept. */
  private pause(ms: number, deadline: number): Promise<number> {
    const wait = Math.max(0, Math.min(ms, deadline - Date.now()));
    if (wait <= 0 || this.stopped) return Promise.resolve(0);
    const t0 = performance.now();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakePause = undefined;
        resolve(Math.round((performance.now() - t0) * 10) / 10);
      };
      const timer = setTimeout(done, wait);
      this.wakePause = done;
    });
  }

  /** Runs one statement; returns rows deleted, or -1 after an error (the table is skipped for this run). */
  private async statement(
    table: CleanupTable,
    limit: number,
    report: CleanupReport,
  ): Promise<number> {
    let batch: CleanupBatch;
    try {
      batch = await this.withRetries(() =>
        this.inTransaction((exec) => this.deleteBatch(table, exec, limit, this.cursors.get(table))),
      );
    } catch (e) {
      this.cursors.delete(table);
      const message = String((e as Error)?.message ?? e);
      report.errors[table] = message;
      if (this.lastErrors.get(table) !== message) {
        this.lastErrors.set(table, message);
        this.logger.warn(CLEANUP_STATEMENT_FAILED(table, message));
      }
      return -1;
    }
    const n = batch.deleted;
    // A full batch: the sweep goes on from the newest row deleted. Fewer: this sweep is done, the
    // next one starts from the oldest row again (rows skipped meanwhile, e.g. locked, or a lease
    // that has lapsed since, are then found).
    if (n >= limit && batch.last !== undefined) this.cursors.set(table, batch.last);
    else this.cursors.delete(table);
    this.lastErrors.delete(table);
    report.statements++;
    report.deleted[table] += n;
    report.largestBatch = Math.max(report.largestBatch, n);
    if (n > 0) this.metrics.cleanupDeleted.add(n, { table });
    return n;
  }

  /** Runs a statement again (up to 3 tries in all) after a deadlock, lock timeout or busy database. */
  private withRetries<T>(fn: () => Promise<T>): Promise<T> {
    return retryWithJitter(fn, {
      tries: 3,
      stepMs: 10,
      jitterMs: 20,
      retryable: (e) => !this.stopped && this.sql.isRetryable(e),
    });
  }

  /** Autocommit on a pooled connection, or a short transaction (the dialect's isolation level and prelude). */
  private inTransaction<T>(fn: (exec: SqlExecutor) => Promise<T>): Promise<T> {
    return this.store.inCleanupTransaction(this.sql, fn);
  }

  private logRun(r: CleanupReport): void {
    if (!this.logger.enabled) return;
    const total = r.deleted.idempotency + r.deleted.outbox + r.deleted.inbox;
    this.logger.event(total > 0 ? 'log' : 'debug', 'cleanup.run', {
      deleted: r.deleted,
      statements: r.statements,
      ms: r.durationMs,
      pausedMs: r.pausedMs,
      caughtUp: r.caughtUp,
    });
  }
}
