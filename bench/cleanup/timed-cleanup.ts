import { CleanupService, type CleanupTable } from '../../lib';
import type { CleanupBatch } from '../../lib/persistence/dialects';
import type { SqlExecutor } from '../../lib/persistence/sql-executor';

/** Wall-clock figures of the cleanup statements, as the app sees them (pool + round trip + statement). */
export interface StatementTimings {
  count: number;
  deleted: number;
  maxMs: number;
  totalMs: number;
  /** Every statement's duration in ms, in order. */
  durations: number[];
}

/** The library's CleanupService, timing each bounded DELETE through its protected hook. */
export class TimedCleanupService extends CleanupService {
  timings: StatementTimings = { count: 0, deleted: 0, maxMs: 0, totalMs: 0, durations: [] };

  reset(): void {
    this.timings = { count: 0, deleted: 0, maxMs: 0, totalMs: 0, durations: [] };
  }

  protected override async deleteBatch(
    table: CleanupTable,
    exec: SqlExecutor,
    limit: number,
    from?: unknown,
  ): Promise<CleanupBatch> {
    const t0 = process.hrtime.bigint();
    const batch = await super.deleteBatch(table, exec, limit, from);
    const n = batch.deleted;
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const t = this.timings;
    t.count++;
    t.deleted += n;
    t.totalMs += ms;
    t.maxMs = Math.max(t.maxMs, ms);
    t.durations.push(ms);
    return batch;
  }
}
