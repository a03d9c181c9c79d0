/**
 * The contract between `bench/run.js` and a benchmark suite. A suite is a folder
 * `bench/<name>/` whose `index.ts` default-exports a `BenchSuite`; `npm run build` compiles it
 * to `dist/bench/<name>/index.js`, where the runner loads it (see bench/README.md).
 */
export interface BenchSuite {
  /** One line: what the suite measures. */
  description: string;
  /**
   * Upper bound of the suite's wall-clock time in ms. The suite keeps itself under it; the
   * runner stops the suite's process (SIGTERM, then SIGKILL) when it is exceeded.
   */
  maxDurationMs: number;
  run(ctx: BenchContext): Promise<BenchReport>;
}

export interface BenchContext {
  /** Arguments after the suite name: `npm run bench -- http-overhead --db=postgres` → ['--db=postgres']. */
  args: string[];
  /** Short runs for a smoke check of the suite itself (`--quick`): figures are not meaningful. */
  quick: boolean;
  /** Progress output (stderr), prefixed with the suite name. */
  log(message: string): void;
  /** Registers cleanup (stop servers, drop scratch databases); runs on success, failure and SIGTERM. */
  onCleanup(fn: () => Promise<void> | void): void;
  /** Folder for side files (profiles, logs): `.bench-results/<suite>/`. */
  outDir: string;
}

/** A table the runner prints and stores. Cells are preformatted strings or numbers. */
export interface BenchTable {
  title: string;
  columns: string[];
  rows: Array<Array<string | number>>;
}

/** A target from the issue, checked on the measured figures. */
export interface BenchCheck {
  name: string;
  target: string;
  actual: string;
  ok: boolean;
  /** Shown for information only (e.g. a target set for another database): never fails --strict. */
  informative?: boolean;
}

export interface BenchReport {
  tables: BenchTable[];
  checks?: BenchCheck[];
  notes?: string[];
  /** Everything else worth keeping in the JSON results (raw figures, parameters). */
  data?: unknown;
}
