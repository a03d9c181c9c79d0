import type { INestApplication } from '@nestjs/common';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createSampleApp } from '../../sample-app/main';
import { faultPreload } from './fault-preload';
import { freePort } from './free-port';

export type Platform = 'express' | 'fastify';

/** Boots the sample app in this process on a test database. */
export async function startSampleApp(
  dbUrl: string,
  platform: Platform,
  env: Record<string, string> = {},
): Promise<INestApplication> {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  try {
    const app = await createSampleApp({ dbUrl, platform, logger: false });
    await app.init();
    if (platform === 'fastify') await (app.getHttpAdapter().getInstance() as any).ready();
    await app.listen(0, '127.0.0.1');
    return app;
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Base URL of an app listening in this process. */
export async function baseUrl(app: INestApplication): Promise<string> {
  const url = await app.getUrl();
  return url.replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
}

/**
 * Jest time-out for a hook or test that starts an app and warms its pool (`warmSampleAppPool`):
 * on SQL Server (Babelfish) every cold connection's first batch starts a second or more late, and
 * several seconds late on a slow or loaded 2-core machine (CI on 2026-11-26: a fixture app's
 * set-up went past Jest's 60 s), so there it gets minutes. Elsewhere Jest's default.
 */
export const appSetupTimeoutMs = (kind: string): number => (kind === 'mssql' ? 300_000 : 60_000);

/**
 * Runs `connections` overlapping payments on fresh keys against a running sample app (its
 * `X-Demo-Delay-Ms` switch keeps each one on its pooled connection for a moment), so that every
 * connection of its pool (10 by default) has opened and run the gate's statements once. On
 * Babelfish a new connection is a new PostgreSQL backend whose first reservation batch starts a
 * second or more late on a loaded machine: a test that times an in-flight duplicate, or a client
 * time-out of a few hundred milliseconds, would otherwise race a cold connection instead of the
 * behaviour it asserts. A running service's pool is warm. `route`: another app's guarded POST
 * route and its delay header (the gate fixture's `/gate/...` routes take `x-delay-ms`).
 */
export async function warmSampleAppPool(
  url: string,
  connections = 10,
  route = { path: '/payments', delayHeader: 'x-demo-delay-ms' },
): Promise<void> {
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const r = await fetch(`${url}${route.path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
          [route.delayHeader]: '300',
        },
        body: JSON.stringify({
          amount: 1,
          currency: 'EUR',
          customerId: `warm-up-${randomUUID().slice(0, 8)}`,
        }),
      });
      await r.arrayBuffer();
      // 503: the database was busy and nothing was committed; the connection is open all the same.
      if (r.status !== 201 && r.status !== 503) {
        throw new Error(`warming the app's pool: ${r.status} from POST ${route.path}`);
      }
    }),
  );
}

/** The sample app as a real OS process (the built dist/sample-app/main.js). */
export interface AppProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * How long a spawned sample app may take to answer 200 on /health: 90 s, or SAMPLE_APP_BOOT_MS.
 * Booting is Node loading Nest, the first process's migrations and a pool's first connection;
 * on a loaded 2-core machine against Babelfish that once ran past the former 30 s (CI of
 * 2026-11-26, SQL Server phase: no output, no error, only slow), which failed a whole spec file's
 * hooks for no fault of the library.
 */
const BOOT_MS = Math.max(1000, Number(process.env.SAMPLE_APP_BOOT_MS ?? 90_000));

export async function spawnSampleApp(env: Record<string, string>): Promise<AppProcess> {
  const port = await freePort();
  const main = join(__dirname, '..', '..', 'dist', 'sample-app', 'main.js');
  const child = spawn(process.execPath, [...faultPreload({ ...process.env, ...env }), main], {
    // JSON logs: the library's events are objects, which tests find by their fields.
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  const deadline = started + BOOT_MS;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`sample app exited with ${child.exitCode}:\n${out}`);
    }
    try {
      const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) });
      if (r.status === 200) break;
    } catch {
      // not listening yet, or /health not answering yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`sample app did not become healthy in ${BOOT_MS / 1000} s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const bootMs = Date.now() - started;
  // A slow boot is no failure, but CI's log should say where a slow run's time went.
  if (bootMs > 20_000) process.stderr.write(`[sample-app] healthy after ${bootMs} ms on ${url}\n`);
  return {
    url,
    child,
    output: () => out,
    kill: (signal: NodeJS.Signals = 'SIGTERM') =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}
