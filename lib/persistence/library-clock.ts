/**
 * The in-process clock of the library's time-bound memory (the replay cache's lifetimes): a
 * monotonic reading in milliseconds, only differences count. Everything stored (key expiry,
 * leases, outbox retry times) is timed by the database's clock instead. A port: a global module
 * that provides `LibraryClock` replaces it (the testing kit does, to move time in tests); without
 * one the library reads `performance.now()`.
 */
export interface LibraryClock {
  /** A monotonic reading in milliseconds; only differences between two readings count. */
  now(): number;
}

/** The injection token of the `LibraryClock` port. */
export const LibraryClock = Symbol('LibraryClock');

/** The default: `performance.now()`. */
export const MONOTONIC_CLOCK: LibraryClock = { now: () => performance.now() };
