import type { DataSource } from 'typeorm';
import type { LibraryClock } from '../persistence/library-clock';

/** The SQL function the kit's statements call instead of SQLite's `'now'`. */
const NOW_FUNCTION = 'eo_test_now';

/**
 * The library's clock in the testing module. The library takes every time that decides something
 * (key expiry, leases of stored keys and claimed outbox batches, outbox retry times, inbox and
 * cleanup ages) from the database (SQLite's `'now'`), and the replay cache's lifetimes from its
 * in-process clock (the `LibraryClock` port): this clock is both. It runs with real time plus the
 * offset `advance()` adds.
 */
export class TestClock implements LibraryClock {
  private offsetMs = 0;

  /** Milliseconds since the epoch, as the database sees them. */
  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** Moves time forward (a TTL, a lease, a retry backoff passes at once). */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`advance(${ms}): a duration in ms >= 0`);
    }
    this.offsetMs += ms;
  }

  /** Back to real time. */
  reset(): void {
    this.offsetMs = 0;
  }

  /**
   * Makes a better-sqlite3 DataSource read this clock: a SQL function returning its time, and
   * statements prepared with that function in place of SQLite's `'now'` time value.
   */
  install(dataSource: DataSource): void {
    const db = (dataSource.driver as unknown as { databaseConnection: SqliteConnection })
      .databaseConnection;
    db.function(NOW_FUNCTION, { deterministic: false }, () =>
      new Date(this.now()).toISOString().replace('T', ' ').replace('Z', ''),
    );
    const prepare = db.prepare.bind(db);
    db.prepare = (sql: string) => prepare(sql.replace(/'now'/g, `${NOW_FUNCTION}()`));
  }
}

interface SqliteConnection {
  function(name: string, options: { deterministic: boolean }, fn: () => string): unknown;
  prepare(sql: string): unknown;
}
