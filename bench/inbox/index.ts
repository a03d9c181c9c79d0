import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import type {
  BenchCheck,
  BenchContext,
  BenchReport,
  BenchSuite,
  BenchTable,
} from '../support/bench-suite';
import { percentile } from '../support/load';
import {
  type BenchDatabaseKind,
  createScratchDatabase,
  isReachable,
} from '../support/scratch-database';
import { cpuTimeMs, type ServerProcess, spawnServer } from '../support/server-process';
import type { ConsumeMode, RunResult } from './inbox-bench.controller';

/**
 * bench/inbox: messages per second through the inbox vs the same handler without it.
 *
 * A server process (the library on a scratch database) consumes batches of messages in process,
 * `concurrency` at a time, with one handler: an INSERT of one row through TransactionHost.tx.
 * Scenarios, interleaved in rounds: the bare handler (its INSERT autocommits), the handler in a
 * transaction of its own, and the handler through InboxService.process (claim + handler in one
 * transaction); after each inbox round, the same ids again (duplicates, skipped). No broker:
 * the figures isolate what the inbox costs. Target: inbox ≥ 0.7× the bare handler.
 */

const SUITE_LIMIT_MS = 8 * 60_000;
const TARGET_RATIO = 0.7;
const COMPARED: ConsumeMode[] = ['bare', 'bare-tx', 'inbox'];
const LABEL: Record<ConsumeMode, string> = {
  bare: 'bare handler (1 INSERT, autocommit)',
  'bare-tx': 'bare handler in its own transaction',
  inbox: 'through the inbox (claim + INSERT, 1 transaction)',
  'inbox-duplicate': 'through the inbox, redelivered (skipped)',
};
// The databases this suite runs on (not SQL Server).
const DB_TITLE: Partial<Record<BenchDatabaseKind, string>> = {
  postgres: 'PostgreSQL',
  sqlite: 'SQLite (better-sqlite3, WAL)',
  mariadb: 'MariaDB',
};

interface Params {
  dbs: BenchDatabaseKind[];
  messages: number;
  rounds: number;
  concurrency: number;
}

function parseParams(ctx: BenchContext): Params {
  const get = (name: string) => {
    const hit = ctx.args.find((a) => a.startsWith(`--${name}=`));
    return hit ? hit.slice(name.length + 3) : process.env[`BENCH_${name.toUpperCase()}`];
  };
  const num = (name: string, dflt: number) => {
    const v = get(name);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) {
      throw new Error(`--${name} must be a positive integer, got "${v}"`);
    }
    return n;
  };
  const dbs = (get('db') ?? 'postgres,sqlite')
    .split(',')
    .map((s) => s.trim()) as BenchDatabaseKind[];
  for (const d of dbs) {
    if (!(d in DB_TITLE)) {
      throw new Error(`--db: unknown database "${d}" (postgres, sqlite, mariadb)`);
    }
  }
  return {
    dbs,
    messages: num('messages', ctx.quick ? 200 : 2000),
    rounds: num('rounds', ctx.quick ? 1 : 5),
    concurrency: num('concurrency', 8),
  };
}

interface Sample {
  mode: ConsumeMode;
  round: number;
  msgPerSec: number;
  cpuMsPerMsg: number;
}

const round1 = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const median = (xs: number[]) => percentile(xs, 0.5);

async function runScenario(
  server: ServerProcess,
  mode: ConsumeMode,
  prefix: string,
  p: Params,
  messages = p.messages,
): Promise<{ result: RunResult; cpuMs: number }> {
  const cpu0 = cpuTimeMs([server.pid]);
  const r = await fetch(`${server.url}/bench/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ mode, prefix, messages, concurrency: p.concurrency }),
  });
  if (!r.ok) throw new Error(`POST /bench/run answered ${r.status}: ${await r.text()}`);
  const result = (await r.json()) as RunResult;
  const cpuMs = cpuTimeMs([server.pid]) - cpu0;
  if (result.errors) {
    throw new Error(`${mode}: ${result.errors} message(s) failed, first: ${result.firstError}`);
  }
  const expected =
    mode === 'inbox-duplicate'
      ? { processed: 0, duplicates: messages }
      : { processed: messages, duplicates: 0 };
  if (result.processed !== expected.processed || result.duplicates !== expected.duplicates) {
    throw new Error(
      `${mode}: expected ${JSON.stringify(expected)}, got processed ${result.processed}, duplicates ${result.duplicates}`,
    );
  }
  return { result, cpuMs };
}

async function benchDatabase(ctx: BenchContext, kind: BenchDatabaseKind, p: Params) {
  const db = await createScratchDatabase(kind);
  let server: ServerProcess | undefined;
  ctx.onCleanup(async () => {
    await server?.stop();
    await db
      .drop()
      .catch((e) => ctx.log(`could not drop ${db.name ?? db.url}: ${(e as Error).message}`));
  });
  server = await spawnServer({
    script: join(__dirname, 'inbox-server.js'),
    env: { DB_URL: db.url },
    readyPath: '/bench/health',
  });
  const runId = randomBytes(4).toString('hex');

  // Sanity and warm-up: every scenario once on a quarter batch.
  const warm = Math.max(20, Math.floor(p.messages / 4));
  for (const mode of COMPARED) await runScenario(server, mode, `warm-${mode}-${runId}`, p, warm);
  await runScenario(server, 'inbox-duplicate', `warm-inbox-${runId}`, p, warm);

  const samples: Sample[] = [];
  for (let r = 0; r < p.rounds; r++) {
    // Rotate the order every round so that no scenario always runs first or last.
    const order = COMPARED.map((_, i) => COMPARED[(i + r) % COMPARED.length]);
    for (const mode of order) {
      ctx.log(`${kind}: round ${r + 1}/${p.rounds}, ${mode}`);
      const prefix = `${mode}-${r}-${runId}`;
      const { result, cpuMs } = await runScenario(server, mode, prefix, p);
      samples.push({
        mode,
        round: r,
        msgPerSec: (result.messages * 1000) / result.elapsedMs,
        cpuMsPerMsg: cpuMs / result.messages,
      });
      if (mode === 'inbox') {
        const dup = await runScenario(server, 'inbox-duplicate', prefix, p);
        samples.push({
          mode: 'inbox-duplicate',
          round: r,
          msgPerSec: (dup.result.messages * 1000) / dup.result.elapsedMs,
          cpuMsPerMsg: dup.cpuMs / dup.result.messages,
        });
      }
    }
  }

  // What was written: one row per processed message, none for the skipped duplicates.
  const ds = new DataSource({ ...(databaseOptionsFromUrl(db.url) as any) });
  await ds.initialize();
  let rows: Array<{ note: string; n: number }>;
  let inboxRows: number;
  try {
    rows = await ds.query(`SELECT note, COUNT(*) AS n FROM bench_effects GROUP BY note`);
    inboxRows = Number((await ds.query(`SELECT COUNT(*) AS n FROM inbox_messages`))[0].n);
  } finally {
    await ds.destroy();
  }
  const written = Object.fromEntries(rows.map((r) => [r.note, Number(r.n)]));
  const perMode = warm + p.rounds * p.messages;
  for (const mode of COMPARED) {
    if (written[mode] !== perMode) {
      throw new Error(`${kind}: ${mode} wrote ${written[mode]} rows, expected ${perMode}`);
    }
  }
  if (written['inbox-duplicate'] || inboxRows !== perMode) {
    throw new Error(
      `${kind}: duplicates wrote rows or the inbox holds ${inboxRows} records (expected ${perMode})`,
    );
  }

  const of = (mode: ConsumeMode) => samples.filter((s) => s.mode === mode);
  const bareByRound = new Map(of('bare').map((s) => [s.round, s.msgPerSec]));
  const ratios = (mode: ConsumeMode) =>
    of(mode).map((s) => s.msgPerSec / (bareByRound.get(s.round) ?? NaN));
  const table: BenchTable = {
    title: `${DB_TITLE[kind]}: ${p.messages} messages per round, ${p.rounds} round(s), ${p.concurrency} at a time`,
    columns: [
      'scenario',
      'msg/s (median)',
      'min–max',
      'server CPU ms/msg',
      '× bare (median of rounds)',
    ],
    rows: (['bare', 'bare-tx', 'inbox', 'inbox-duplicate'] as ConsumeMode[]).map((mode) => {
      const rates = of(mode).map((s) => s.msgPerSec);
      return [
        LABEL[mode],
        Math.round(median(rates)),
        `${Math.round(Math.min(...rates))}–${Math.round(Math.max(...rates))}`,
        round1(median(of(mode).map((s) => s.cpuMsPerMsg)), 2),
        mode === 'bare' ? '1.00' : median(ratios(mode)).toFixed(2),
      ];
    }),
  };
  await server.stop();
  server = undefined;
  const txByRound = new Map(of('bare-tx').map((s) => [s.round, s.msgPerSec]));
  const vsTx = median(of('inbox').map((s) => s.msgPerSec / (txByRound.get(s.round) ?? NaN)));
  return { table, ratio: median(ratios('inbox')), vsTx, samples, written };
}

const suite: BenchSuite = {
  description:
    'Inbox: messages/s through InboxService.process vs the same one-INSERT handler without it, PostgreSQL and SQLite',
  maxDurationMs: SUITE_LIMIT_MS,

  async run(ctx) {
    const p = parseParams(ctx);
    const tables: BenchTable[] = [];
    const checks: BenchCheck[] = [];
    const notes: string[] = [];
    const data: Record<string, unknown> = { params: p };
    for (const kind of p.dbs) {
      if (!(await isReachable(kind))) {
        notes.push(`${DB_TITLE[kind]} is not reachable on loopback: skipped.`);
        continue;
      }
      const r = await benchDatabase(ctx, kind, p);
      tables.push(r.table);
      checks.push({
        name: `${DB_TITLE[kind]}: inbox / bare handler`,
        target: `>= ${TARGET_RATIO}`,
        actual: r.ratio.toFixed(2),
        ok: r.ratio >= TARGET_RATIO,
      });
      checks.push({
        name: `${DB_TITLE[kind]}: inbox / handler in its own transaction`,
        target: 'information',
        actual: r.vsTx.toFixed(2),
        ok: true,
        informative: true,
      });
      data[kind] = {
        ratio: r.ratio,
        ratioVsTransaction: r.vsTx,
        samples: r.samples,
        rowsWritten: r.written,
      };
    }
    const load = loadavg();
    notes.push(
      'Each message is consumed in the server process (no broker): the bare handler INSERTs one row through TransactionHost.tx; the inbox adds its claim INSERT and wraps both in one transaction. Broker round trips, the same with and without the inbox, are left out so the ratio shows the inbox alone.',
      'Rounds interleave the scenarios (order rotated each round); the ratio is the median over rounds of inbox / bare of the same round. CPU is the server process only (user + system from /proc), not the database server.',
      'Every run is checked: one row per processed message, none for the redelivered ones, one inbox record per message.',
      `Machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}, load average ${load[0].toFixed(2)}; the database server shares the cores.`,
    );
    return { tables, checks, notes, data } satisfies BenchReport;
  },
};

export default suite;
