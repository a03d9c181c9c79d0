import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';

/**
 * `--pin`: the app being measured runs alone on CPU 0; what serves it (this process and its load
 * generator, the app's database backends, the Redis server) runs on the other CPUs. On a 2-core
 * machine an unpinned app shares its core with PostgreSQL and the load generator at random, and
 * each slice's CPU per request moves with that (±15 % run to run, docs/benchmarks.md). Every
 * variant is pinned the same way, so the comparison stays side by side.
 *
 * Uses `taskset` (util-linux). Affinities this class changed on processes that outlive the bench
 * (the Redis server) are put back by `restore()`.
 */
export class CpuPinning {
  private readonly saved = new Map<number, string>();

  private constructor(
    readonly appCpus: string,
    readonly helperCpus: string,
  ) {}

  /** A pinning, or the reason there is none (one CPU, or no taskset). */
  static open(): CpuPinning | string {
    const n = cpus().length;
    if (n < 2) return `--pin needs 2 CPUs, this machine has ${n}`;
    try {
      execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    } catch {
      return '--pin needs taskset (util-linux), which is not on PATH';
    }
    return new CpuPinning('0', n === 2 ? '1' : `1-${n - 1}`);
  }

  /** The measured app: CPU 0 only. */
  app(pid: number): void {
    set(pid, this.appCpus);
  }

  /** A process serving the app; `restoreLater` keeps its affinity to put back at the end. */
  helper(pid: number, restoreLater = false): void {
    if (restoreLater && !this.saved.has(pid)) this.saved.set(pid, current(pid));
    set(pid, this.helperCpus);
  }

  /** Puts back the affinities saved by `helper(pid, true)`; a process gone since is skipped. */
  restore(): void {
    for (const [pid, list] of this.saved) {
      try {
        set(pid, list);
      } catch {
        // the process has exited
      }
    }
    this.saved.clear();
  }

  describe(): string {
    return `--pin: each app on CPU ${this.appCpus}; the load generator, the database backends and Redis on CPU ${this.helperCpus}`;
  }
}

function set(pid: number, list: string): void {
  execFileSync('taskset', ['-apc', list, String(pid)], { stdio: 'ignore' });
}

/** A process's CPU list as taskset prints it ("pid 12's current affinity list: 0,1"). */
function current(pid: number): string {
  const out = execFileSync('taskset', ['-pc', String(pid)], { encoding: 'utf8' });
  return out.slice(out.lastIndexOf(':') + 1).trim();
}
