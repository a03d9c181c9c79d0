import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort } from '../../test/support/free-port';

/** A server under test, running in its own OS process (never in the load generator's). */
export interface ServerProcess {
  url: string;
  pid: number;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

export interface SpawnServerOptions {
  /** The compiled entry script (e.g. dist/bench/http-overhead/bench-server.js). */
  script: string;
  env?: Record<string, string>;
  /** Extra node flags (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Path answered with 2xx once the server is ready. Default /health. */
  readyPath?: string;
  readyTimeoutMs?: number;
}

/** Starts `script` with `PORT` set to a free loopback port and waits until it answers. */
export async function spawnServer(o: SpawnServerOptions): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), o.script], {
    env: { ...process.env, ...o.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (o.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${o.script} exited with ${child.exitCode}:\n${out}`);
    try {
      const r = await fetch(`${url}${o.readyPath ?? '/health'}`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${o.script} did not become ready:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      child.kill('SIGTERM');
    });
  return { url, pid: child.pid!, child, output: () => out, stop };
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/**
 * CPU time (user + system, ms) consumed so far by the given processes, from /proc/<pid>/stat.
 * Linux only; processes that are gone or unreadable count as 0. Resolution: 10 ms.
 */
export function cpuTimeMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** True when per-process CPU accounting is available (Linux /proc). */
export function canMeasureCpu(): boolean {
  try {
    readFileSync(`/proc/${process.pid}/stat`, 'utf8');
    return true;
  } catch {
    return false;
  }
}

/** Machine-wide CPU counters from /proc/stat (ms of busy and total time, all cores). */
export function machineCpuMs(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    return {
      busy: ((total - idle) * 1000) / TICKS_PER_SECOND,
      total: (total * 1000) / TICKS_PER_SECOND,
    };
  } catch {
    return undefined;
  }
}
