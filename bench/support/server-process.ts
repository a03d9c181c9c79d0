import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
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
    if (child.exitCode !== null) {
      throw new Error(`${o.script} exited with ${child.exitCode}:\n${out}`);
    }
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

/** The parent pid of a process, from /proc/<pid>/stat (undefined when it is gone). */
function parentPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

const allPids = (): number[] =>
  readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);

/** A process's command name (/proc/<pid>/comm, e.g. `mariadbd`), or undefined when it is gone. */
export function processName(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The processes with one of these command names. */
export function pidsNamed(names: string[]): number[] {
  return allPids().filter((p) => names.includes(processName(p) ?? ''));
}

/** The processes whose parent is `pid` (e.g. a PostgreSQL postmaster's backends and workers). */
export function childPids(pid: number): number[] {
  return allPids().filter((p) => parentPid(p) === pid);
}

/**
 * The process that listens on TCP `port` (any local address), from /proc/net/tcp{,6} and the
 * processes' open sockets: the server itself, not a child that inherited the socket. Undefined
 * when none can be seen (another network namespace, no permission to read its fds).
 */
export function pidListeningOn(port: number): number | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines: string[];
    try {
      lines = readFileSync(table, 'utf8').split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // 0A: LISTEN
      if (parseInt(f[1].slice(f[1].lastIndexOf(':') + 1), 16) === port) inodes.add(f[9]);
    }
  }
  if (!inodes.size) return undefined;
  const holders: number[] = [];
  for (const pid of allPids()) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m && inodes.has(m[1])) {
        holders.push(pid);
        break;
      }
    }
  }
  return holders.find((p) => !holders.includes(parentPid(p) ?? -1));
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
