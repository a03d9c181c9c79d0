/**
 * `npm run demo`: the sample app (embedded SQLite in a temporary directory), a flaky link in
 * front of it (./flaky-proxy.ts) and a retry storm of many clients using createIdempotentFetch
 * (./storm.ts), with a live view (./live-view.ts). It ends with a summary and exits 0 only if
 * every intended payment exists exactly once and has exactly one ledger entry.
 *
 *   npm run demo -- --payments=300 --clients=24 --seconds=60 --mode=transactional|leased
 *     --timeout-ms=1000 --max-attempts=12 --reset=0.05 --cut=0.1 --drop=0.1 --delay=0.15
 *     --slow=0.02 --slow-ms=1200 --seed=<n> --db-url=<DB_URL of the app> (default: SQLite in a temp dir)
 *     --naive (a new key on every attempt, as a client that forgets its key: duplicates, exit 1)
 *
 * Only loopback traffic: the app, the proxy and the clients all listen/talk on 127.0.0.1.
 */
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { spawnServer, type ServerProcess } from '../support/server-process';
import { startFlakyProxy, type FlakyProxy } from './flaky-proxy';
import { type DemoSnapshot, LiveView } from './live-view';
import { customerOf, emptyStormStats, runStorm } from './storm';

interface DemoFlags {
  payments: number;
  clients: number;
  seconds: number;
  mode: 'transactional' | 'leased';
  timeoutMs: number;
  maxAttempts: number;
  reset: number;
  cut: number;
  drop: number;
  delay: number;
  slow: number;
  slowMs: number;
  seed: number;
  dbUrl?: string;
  naive: boolean;
}

const USAGE =
  'usage: npm run demo -- [--payments=300] [--clients=24] [--seconds=60] [--mode=transactional|leased] ' +
  '[--timeout-ms=1000] [--max-attempts=12] [--reset=0.05] [--cut=0.1] [--drop=0.1] [--delay=0.15] ' +
  '[--slow=0.02] [--slow-ms=1200] [--seed=<n>] [--db-url=<url>] [--naive]';

function parseFlags(argv: string[]): DemoFlags {
  const f: DemoFlags = {
    payments: 300,
    clients: 24,
    seconds: 60,
    mode: 'transactional',
    timeoutMs: 1000,
    maxAttempts: 12,
    reset: 0.05,
    cut: 0.1,
    drop: 0.1,
    delay: 0.15,
    slow: 0.02,
    slowMs: 1200,
    seed: Date.now() % 1_000_000,
    naive: false,
  };
  const ints: Record<string, keyof DemoFlags> = {
    payments: 'payments',
    clients: 'clients',
    seconds: 'seconds',
    'timeout-ms': 'timeoutMs',
    'max-attempts': 'maxAttempts',
    'slow-ms': 'slowMs',
    seed: 'seed',
  };
  const shares = ['reset', 'cut', 'drop', 'delay', 'slow'] as const;
  for (const arg of argv) {
    if (arg === '--naive') {
      f.naive = true;
      continue;
    }
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!m) throw new Error(`unknown argument "${arg}"\n${USAGE}`);
    const [, name, value] = m;
    if (name in ints) {
      const n = Number(value);
      if (!Number.isSafeInteger(n) || n < (name === 'seed' || name === 'slow-ms' ? 0 : 1)) {
        throw new Error(`--${name} must be a positive integer, got "${value}"`);
      }
      (f as any)[ints[name]] = n;
    } else if ((shares as readonly string[]).includes(name)) {
      const n = Number(value);
      if (!(n >= 0 && n <= 1)) throw new Error(`--${name} must be a share between 0 and 1`);
      (f as any)[name] = n;
    } else if (name === 'mode') {
      if (value !== 'transactional' && value !== 'leased') {
        throw new Error('--mode must be transactional or leased');
      }
      f.mode = value;
    } else if (name === 'db-url') f.dbUrl = value;
    else throw new Error(`unknown flag --${name}\n${USAGE}`);
  }
  if (f.reset + f.cut + f.drop + f.delay > 0.9) {
    throw new Error('--reset + --cut + --drop + --delay must stay at or below 0.9');
  }
  if (f.payments > 100_000 || f.clients > 500 || f.seconds > 3600) {
    throw new Error('--payments ≤ 100000, --clients ≤ 500, --seconds ≤ 3600');
  }
  return f;
}

/** A small seeded generator (mulberry32), so that a run's faults can be replayed with --seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<number> {
  const flags = parseFlags(process.argv.slice(2));
  const started = Date.now();
  const runId = Date.now().toString(36);
  const dir = flags.dbUrl ? undefined : mkdtempSync(join(tmpdir(), 'eo-demo-'));
  const dbUrl = flags.dbUrl ?? `sqlite:${join(dir!, 'demo.sqlite')}`;
  const dbName = dbUrl.startsWith('sqlite:') ? 'SQLite' : new URL(dbUrl).protocol.slice(0, -1);
  const view = new LiveView(process.stdout);
  let app: ServerProcess | undefined;
  let proxy: FlakyProxy | undefined;
  let ds: DataSource | undefined;
  const stopAll = new AbortController();
  // Every call of every client listens to this one signal while it waits (as fetch itself does).
  setMaxListeners(Math.max(10, flags.clients * 4), stopAll.signal);
  process.once('SIGINT', () => stopAll.abort(new Error('interrupted')));

  try {
    process.stdout.write(`starting the sample app (${flags.mode} mode, ${dbName}) …\n`);
    app = await spawnServer({
      script: join(__dirname, '..', '..', 'sample-app', 'main.js'),
      env: { DB_URL: dbUrl, LOG_LEVEL: 'error', IDEMPOTENCY_MODE: flags.mode },
    });
    ds = new DataSource({ ...(databaseOptionsFromUrl(dbUrl) as any) });
    await ds.initialize();
    const random = seeded(flags.seed);
    proxy = await startFlakyProxy(
      app.url,
      { reset: flags.reset, cut: flags.cut, drop: flags.drop, delay: flags.delay },
      Math.round(flags.timeoutMs * 1.5),
      random,
    );

    const storm = emptyStormStats();
    const prefix = `demo-${runId}-`;
    const snapshot: DemoSnapshot = {
      title: [
        `nestjs-exactly-once demo: ${flags.payments} payments, ${flags.clients} clients, ` +
          `${flags.mode} mode on ${dbName}${flags.naive ? ', NAIVE client (new key per attempt)' : ''}`,
        `flaky link: reset ${pct(flags.reset)}, cut ${pct(flags.cut)}, drop ${pct(flags.drop)}, ` +
          `delay ${pct(flags.delay)}; client time-out ${flags.timeoutMs} ms; seed ${flags.seed}`,
      ],
      elapsedMs: 0,
      phase: 'retry storm through the flaky link',
      intended: flags.payments,
      storm,
      proxy: proxy.stats,
    };
    let counting = false;
    const count = async () => {
      if (counting || !ds) return;
      counting = true;
      try {
        const [p] = await ds.query(
          `SELECT COUNT(*) AS n FROM payments WHERE customer_id LIKE '${prefix}%'`,
        );
        const [l] = await ds.query(
          `SELECT COUNT(*) AS n FROM ledger_entries WHERE customer_id LIKE '${prefix}%'`,
        );
        snapshot.paymentsCreated = Number(p.n ?? p.N);
        snapshot.ledgerEntries = Number(l.n ?? l.N);
      } finally {
        counting = false;
      }
    };
    const tick = setInterval(() => {
      snapshot.elapsedMs = Date.now() - started;
      view.draw(snapshot);
    }, 200);
    const counter = setInterval(() => void count().catch(() => {}), 400);

    // The storm gets three quarters of the time; the rest is for the ledger and the checks.
    const budgetMs = flags.seconds * 1000 - (Date.now() - started);
    const stormLimit = setTimeout(
      () => stopAll.abort(new Error('time limit')),
      Math.max(1000, budgetMs * 0.75),
    );
    await runStorm(
      {
        url: proxy.url,
        payments: flags.payments,
        clients: flags.clients,
        timeoutMs: flags.timeoutMs,
        maxAttempts: flags.maxAttempts,
        slowShare: flags.slow,
        slowMs: flags.slowMs,
        runId,
        naive: flags.naive,
        random,
        signal: stopAll.signal,
      },
      storm,
    );
    clearTimeout(stormLimit);

    snapshot.phase = 'waiting for the ledger (outbox → inbox)';
    const ledgerDeadline = started + flags.seconds * 1000;
    for (;;) {
      await count();
      const done =
        snapshot.ledgerEntries !== undefined &&
        snapshot.ledgerEntries >= (snapshot.paymentsCreated ?? 0);
      if (done || Date.now() > ledgerDeadline || stopAll.signal.aborted) break;
      await sleep(200);
    }
    clearInterval(counter);
    clearInterval(tick);

    // The verdict comes from the app's API, on the direct (reliable) way in.
    snapshot.phase = 'checking through the API';
    const all = (await (await fetch(`${app.url}/payments`)).json()) as {
      id: string;
      customerId: string;
    }[];
    const ours = all.filter((p) => p.customerId.startsWith(prefix));
    const perCustomer = new Map<string, string[]>();
    for (const p of ours) {
      perCustomer.set(p.customerId, [...(perCustomer.get(p.customerId) ?? []), p.id]);
    }
    let duplicated = 0;
    let missing = 0;
    let answerMismatch = 0;
    for (let n = 0; n < flags.payments; n++) {
      const c = customerOf(runId, n);
      const ids = perCustomer.get(c) ?? [];
      if (ids.length === 0) missing++;
      if (ids.length > 1) duplicated += ids.length - 1;
      const answered = storm.answered.get(c);
      if (answered !== undefined && ids[0] !== answered) answerMismatch++;
    }
    let ledgerTotal = 0;
    let ledgerDuplicated = 0;
    let ledgerMissing = 0;
    const queue = [...ours];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let p = queue.pop(); p; p = queue.pop()) {
          const rows = (await (
            await fetch(`${app!.url}/ledger?paymentId=${encodeURIComponent(p.id)}`)
          ).json()) as unknown[];
          ledgerTotal += rows.length;
          if (rows.length === 0) ledgerMissing++;
          if (rows.length > 1) ledgerDuplicated += rows.length - 1;
        }
      }),
    );
    snapshot.paymentsCreated = ours.length;
    snapshot.ledgerEntries = ledgerTotal;
    snapshot.elapsedMs = Date.now() - started;
    snapshot.phase = 'done';
    view.draw(snapshot, true);
    view.end();

    const ok =
      ours.length === flags.payments &&
      ledgerTotal === flags.payments &&
      duplicated === 0 &&
      missing === 0 &&
      ledgerDuplicated === 0 &&
      ledgerMissing === 0 &&
      answerMismatch === 0;
    const r = storm.retries;
    const u = proxy.stats.upstream;
    const fl = proxy.stats.faults;
    const lines = [
      '',
      `Summary (${flags.mode} mode, ${dbName}, ${flags.payments} payments, ${flags.clients} clients, ${((Date.now() - started) / 1000).toFixed(1)} s, seed ${flags.seed})`,
      `  attempts sent              ${storm.attempts} (${(storm.attempts / Math.max(1, storm.done)).toFixed(2)} per payment)`,
      `  retries                    ${r.timeout + r['network-error'] + r['in-progress'] + r.status}: ${r.timeout} time-outs, ${r['network-error']} network errors, ${r['in-progress']} 409 in progress, ${r.status} 5xx/429`,
      `  flaky link                 ${proxy.stats.requests} requests: ${fl.reset} reset, ${fl.cut} cut after the answer, ${fl.drop} answers dropped, ${fl.delay} delayed`,
      `  server answers             ${u.created} created, ${u.replayed} replayed, ${u.inProgress} 409 in progress, ${u.other} other`,
      `  answers the clients got    ${storm.answered.size} payments (${storm.replayedAnswers} as a replay of the first answer), ${storm.gaveUp} gave up`,
      `  payments intended          ${flags.payments}`,
      `  payments created           ${ours.length} (duplicated ${duplicated}, missing ${missing}, answer ≠ stored ${answerMismatch})`,
      `  ledger entries             ${ledgerTotal} (duplicated ${ledgerDuplicated}, missing ${ledgerMissing})`,
      ok
        ? 'PASS: every intended payment exists exactly once, with exactly one ledger entry.'
        : 'FAIL: payments or ledger entries were duplicated or lost (see above).',
    ];
    for (const f of storm.failures.slice(0, 5)) lines.push(`  gave up: ${f}`);
    process.stdout.write(lines.join('\n') + '\n');
    return ok ? 0 : 1;
  } catch (e) {
    view.end();
    process.stderr.write(`demo failed: ${(e as Error).stack ?? e}\n`);
    if (app) {
      process.stderr.write(`--- sample app output (tail) ---\n${app.output().slice(-4000)}\n`);
    }
    return 1;
  } finally {
    await proxy?.close().catch(() => {});
    await ds?.destroy().catch(() => {});
    await app?.stop().catch(() => {});
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

function pct(share: number): string {
  return `${Math.round(share * 100)}%`;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  },
);
