import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import type {
  BenchCheck,
  BenchContext,
  BenchReport,
  BenchSuite,
  BenchTable,
} from '../support/bench-suite';
import type { LoadSample } from '../support/load';
import { mergeSamples, percentile, runLoad } from '../support/load';
import type { BenchDatabaseKind } from '../support/scratch-database';
import { createScratchDatabase, isReachable, openAdmin } from '../support/scratch-database';
import type { ServerProcess } from '../support/server-process';
import { canMeasureCpu, cpuTimeMs, machineCpuMs, spawnServer } from '../support/server-process';

/**
 * bench/http-overhead: what `@Idempotent()` costs on the request path.
 *
 * One bench server process per database (PostgreSQL, SQLite), loaded by autocannon from this
 * process over loopback, with the same handler body behind three routes:
 *   (a) an unguarded POST that opens a transaction and inserts the payment (the fair baseline),
 *   (b) the same body under `@Idempotent()` with a fresh key per request, in each mode,
 *   (c) replays: a completed key, same body, each mode.
 * Scenarios are interleaved in short rounds (a b b c c, then c c b b a, ...) so that drift and
 * other load on the machine hit them alike; ratios are computed within one run.
 */

interface Scenario {
  id: string;
  label: string;
  group: 'a' | 'f' | 'b' | 'c';
  mode?: 'transactional' | 'leased';
  path: string;
  keys: 'fresh' | 'replay';
  /** Served by a second server process with the tracing SDK (a no-op exporter). */
  tracing?: boolean;
}

const SCENARIOS: Scenario[] = [
  {
    id: 'unguarded',
    label: '(a) unguarded POST (tx + insert)',
    group: 'a',
    path: '/bench/payments/unguarded',
    keys: 'fresh',
  },
  {
    id: 'floor',
    label: "(f) floor: (a) + the ledger's 2 statements",
    group: 'f',
    path: '/bench/payments/floor',
    keys: 'fresh',
  },
  {
    id: 'first-transactional',
    label: '(b) first execution, transactional',
    group: 'b',
    mode: 'transactional',
    path: '/bench/payments/transactional',
    keys: 'fresh',
  },
  {
    id: 'first-leased',
    label: '(b) first execution, leased',
    group: 'b',
    mode: 'leased',
    path: '/bench/payments/leased',
    keys: 'fresh',
  },
  {
    id: 'replay-transactional',
    label: '(c) replay, transactional',
    group: 'c',
    mode: 'transactional',
    path: '/bench/payments/transactional',
    keys: 'replay',
  },
  {
    id: 'replay-leased',
    label: '(c) replay, leased',
    group: 'c',
    mode: 'leased',
    path: '/bench/payments/leased',
    keys: 'replay',
  },
  {
    id: 'first-transactional-traced',
    label: '(b) first execution, transactional, tracing on',
    group: 'b',
    mode: 'transactional',
    path: '/bench/payments/transactional',
    keys: 'fresh',
    tracing: true,
  },
  {
    id: 'replay-transactional-traced',
    label: '(c) replay, transactional, tracing on',
    group: 'c',
    mode: 'transactional',
    path: '/bench/payments/transactional',
    keys: 'replay',
    tracing: true,
  },
];

/** Targets of issue 2, checked on PostgreSQL. */
const TARGETS: Array<{ id: string; min: number; what: string }> = [
  { id: 'first-transactional', min: 0.8, what: 'b/a transactional' },
  { id: 'first-leased', min: 0.6, what: 'b/a leased' },
  { id: 'replay-transactional', min: 1.5, what: 'c/a (replay, transactional)' },
  { id: 'replay-leased', min: 1.5, what: 'c/a (replay, leased)' },
];

const BODY = JSON.stringify({ amount: 12.5, currency: 'USD', customerId: 'bench-customer-1' });
const SUITE_LIMIT_MS = 6 * 60_000;

interface Params {
  databases: BenchDatabaseKind[];
  connections: number;
  durationSec: number;
  rounds: number;
  warmupSec: number;
  platform: 'express' | 'fastify';
  only: Set<string> | undefined;
  cpuProf: boolean;
  replayKeys: number;
}

interface ScenarioResult {
  id: string;
  label: string;
  sample: LoadSample;
  rps: number;
  p50: number;
  p99: number;
  statements: Record<string, number>;
  appCpuMs: number;
  dbCpuMs: number;
  /** PostgreSQL: WAL bytes written during the scenario (cluster-wide: run the bench alone). */
  walBytes: number;
}

interface DatabaseResult {
  kind: BenchDatabaseKind;
  version: string;
  scenarios: ScenarioResult[];
  machine: { busyPct: number; othersPct: number } | undefined;
}

function parseParams(ctx: BenchContext): Params {
  const get = (name: string): string | undefined => {
    const hit = ctx.args.find((a) => a.startsWith(`--${name}=`));
    return hit
      ? hit.slice(name.length + 3)
      : process.env[`BENCH_${name.toUpperCase().replace(/-/g, '_')}`];
  };
  const num = (name: string, dflt: number) => {
    const v = get(name);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) {
      throw new Error(`--${name} must be a positive number, got "${v}"`);
    }
    return n;
  };
  const databases = (get('db') ?? 'postgres,sqlite')
    .split(',')
    .map((s) => s.trim()) as BenchDatabaseKind[];
  for (const d of databases) {
    if (!['postgres', 'sqlite', 'mariadb'].includes(d)) {
      throw new Error(`--db: unknown database "${d}"`);
    }
  }
  const platform = get('platform') ?? 'express';
  if (platform !== 'express' && platform !== 'fastify') {
    throw new Error(`--platform must be express or fastify`);
  }
  const only = get('only');
  const p: Params = {
    databases,
    connections: Math.round(num('connections', 32)),
    durationSec: num('duration', ctx.quick ? 2 : 10),
    rounds: Math.round(num('rounds', ctx.quick ? 1 : 5)),
    warmupSec: num('warmup', ctx.quick ? 1 : 3),
    platform,
    only: only ? new Set(only.split(',').map((s) => s.trim())) : undefined,
    cpuProf: ctx.args.includes('--cpu-prof'),
    replayKeys: Math.round(num('replay-keys', 512)),
  };
  // Keep the suite's own runtime bounded: scale the timed parts down if asked for too much.
  const scenarios = p.only ? p.only.size : SCENARIOS.length;
  const planned =
    p.databases.length * scenarios * (p.durationSec + p.warmupSec + 1.5 * p.rounds) +
    p.databases.length * 20;
  const budget = (SUITE_LIMIT_MS - 30_000) / 1000;
  if (planned > budget) {
    const f = budget / planned;
    p.durationSec = Math.max(1, Math.floor(p.durationSec * f));
    p.warmupSec = Math.max(1, Math.floor(p.warmupSec * f));
    ctx.log(
      `durations scaled down to ${p.durationSec} s per scenario (${p.warmupSec} s warm-up) to stay under ${SUITE_LIMIT_MS / 60_000} min`,
    );
  }
  return p;
}

const suite: BenchSuite = {
  description:
    'HTTP overhead of @Idempotent(): unguarded vs first execution vs replay, PostgreSQL and SQLite',
  maxDurationMs: SUITE_LIMIT_MS,

  async run(ctx) {
    const params = parseParams(ctx);
    const scenarios = SCENARIOS.filter(
      (s) => !params.only || params.only.has(s.id) || s.id === 'unguarded',
    );
    const results: DatabaseResult[] = [];
    const notes: string[] = [];
    const load0 = loadavg();
    for (const kind of params.databases) {
      if (!(await isReachable(kind))) {
        notes.push(`${kind}: not reachable on loopback, skipped.`);
        ctx.log(`${kind} is not reachable: skipped`);
        continue;
      }
      results.push(await benchDatabase(kind, scenarios, params, ctx));
    }
    const load1 = loadavg();
    const tables: BenchTable[] = results.map((r) => figuresTable(r, params));
    tables.push(...results.map((r) => statementsTable(r)));
    const checks: BenchCheck[] = [];
    for (const r of results) {
      for (const t of TARGETS) {
        const ratio = ratioOf(r, t.id);
        if (ratio === undefined) continue;
        const informative = r.kind !== 'postgres';
        checks.push({
          name: `${dbName(r)}: ${t.what}${informative ? ' (target is for PostgreSQL)' : ''}`,
          target: `>= ${t.min}`,
          actual: ratio.toFixed(2),
          ok: ratio >= t.min,
          informative,
        });
      }
      // The control (f): what the database charges for the gate's two statements on this machine,
      // and what is left for the interceptor itself.
      const floor = ratioOf(r, 'floor');
      const first = ratioOf(r, 'first-transactional');
      if (floor !== undefined) {
        checks.push({
          name: `${dbName(r)}: f/a, the ledger's 2 statements without the gate (floor of b/a)`,
          target: 'information',
          actual: floor.toFixed(2),
          ok: true,
          informative: true,
        });
        if (first !== undefined) {
          checks.push({
            name: `${dbName(r)}: b/f transactional, the gate's own cost over that floor`,
            target: 'information',
            actual: (first / floor).toFixed(2),
            ok: true,
            informative: true,
          });
        }
      }
    }
    notes.push(
      `Machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}; load average ${load0[0].toFixed(2)} before, ${load1[0].toFixed(2)} after.`,
      'Server and database share the cores with autocannon (and with anything else running): the ratios, measured side by side in one run with interleaved rounds, are more stable than the absolute figures.',
      'CPU µs/req: CPU time of the app server process (and of its PostgreSQL backends) per answered request, from /proc; "CPU ×(a)" is (a)\'s total CPU per request divided by the scenario\'s, i.e. the throughput ratio the machine would give if it were CPU-bound and uncontended.',
    );
    for (const r of results) {
      if (r.machine) {
        notes.push(
          `${dbName(r)} run: machine busy ${r.machine.busyPct.toFixed(0)}% of all cores, of which ${r.machine.othersPct.toFixed(0)} points went to processes other than the benchmark's own (bench server, its database backends, autocannon).`,
        );
      }
    }
    return {
      tables,
      checks,
      notes,
      data: {
        params: { ...params, only: params.only ? [...params.only] : undefined },
        machine: {
          cores: cpus().length,
          model: cpus()[0]?.model,
          node: process.version,
          loadavgBefore: load0,
          loadavgAfter: load1,
        },
        results: results.map((r) => ({
          database: r.kind,
          version: r.version,
          machine: r.machine,
          scenarios: r.scenarios.map((s) => ({
            id: s.id,
            label: s.label,
            requestsPerSecond: round(s.rps, 1),
            ratioToUnguarded: round(s.rps / (r.scenarios[0]?.rps ?? NaN), 3),
            latencyMs: {
              p50: round(s.p50, 2),
              p99: round(s.p99, 2),
              mean: round(mean(s.sample.latencies), 2),
            },
            ok: s.sample.ok,
            failed: s.sample.failed,
            errors: s.sample.errors,
            statuses: s.sample.statuses,
            seconds: round(s.sample.durationSec, 2),
            statementsPerRequest: perRequest(s.statements, s.sample),
            appCpuUsPerRequest: round((s.appCpuMs * 1000) / answered(s.sample), 1),
            dbCpuUsPerRequest: round((s.dbCpuMs * 1000) / answered(s.sample), 1),
            walBytesPerRequest: round(s.walBytes / answered(s.sample), 0),
          })),
        })),
      },
    } satisfies BenchReport;
  },
};

export default suite;

async function benchDatabase(
  kind: BenchDatabaseKind,
  scenarios: Scenario[],
  params: Params,
  ctx: BenchContext,
): Promise<DatabaseResult> {
  ctx.log(`${kind}: creating a scratch database`);
  const db = await createScratchDatabase(kind);
  let server: ServerProcess | undefined;
  /** The same app with the tracing SDK and a no-op exporter, for the "tracing on" rows. */
  let traced: ServerProcess | undefined;
  let admin: DataSource | undefined;
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    await server?.stop();
    await traced?.stop();
    if (admin?.isInitialized) await admin.destroy();
    await db.drop().catch((e) => ctx.log(`could not drop ${db.url}: ${(e as Error).message}`));
  };
  ctx.onCleanup(cleanup);
  try {
    server = await spawnServer({
      script: join(__dirname, 'bench-server.js'),
      env: { DB_URL: db.url, BENCH_HTTP_PLATFORM: params.platform },
      nodeArgs: params.cpuProf
        ? [
            '--cpu-prof',
            `--cpu-prof-dir=${ctx.outDir}`,
            `--cpu-prof-name=http-overhead-${kind}-${Date.now()}.cpuprofile`,
          ]
        : [],
    });
    if (scenarios.some((s) => s.tracing)) {
      traced = await spawnServer({
        script: join(__dirname, 'bench-server.js'),
        env: { DB_URL: db.url, BENCH_HTTP_PLATFORM: params.platform, BENCH_TRACING: 'on' },
      });
    }
    const url = server.url;
    if (kind !== 'sqlite') admin = await openAdmin(kind);
    const version = await serverVersion(kind, admin);
    ctx.log(`${kind}: server pid ${server.pid} on ${url}; sanity checks`);
    await sanityCheck(url);
    // The traced server gets the same warm-up (sanity checks, replay keys through it) as the first.
    if (traced) await sanityCheck(traced.url);
    const runId = randomBytes(4).toString('hex');
    let seq = 0;
    const fresh = () => ({ 'idempotency-key': `${runId}-${(seq++).toString(36)}` });
    const replayPools: Record<string, string[]> = {};
    for (const s of scenarios.filter((x) => x.keys === 'replay')) {
      ctx.log(`${kind}: completing ${params.replayKeys} keys for ${s.id}`);
      replayPools[s.id] = await completeKeys(
        s.tracing ? traced!.url : url,
        s.path,
        params.replayKeys,
        () => fresh()['idempotency-key'],
      );
    }
    const headersFor = (s: Scenario): (() => Record<string, string>) => {
      if (s.keys === 'fresh') return fresh;
      const pool = replayPools[s.id];
      let i = 0;
      // Round-robin over more keys than connections: concurrent requests never share a key.
      return () => ({ 'idempotency-key': pool[i++ % pool.length] });
    };
    const pids = async (): Promise<number[]> => {
      if (kind !== 'postgres' || !admin) return [];
      const rows: Array<{ pid: number }> = await admin.query(
        'SELECT pid FROM pg_stat_activity WHERE datname = $1',
        [db.name],
      );
      return rows.map((r) => Number(r.pid));
    };
    const walLsn = async (): Promise<string | undefined> => {
      if (kind !== 'postgres' || !admin) return undefined;
      return (await admin.query('SELECT pg_current_wal_lsn()::text AS lsn'))[0].lsn;
    };
    const walSince = async (from: string | undefined): Promise<number> => {
      if (from === undefined) return 0;
      const rows = await admin!.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS d', [
        from,
      ]);
      return Number(rows[0].d);
    };
    const slice = async (s: Scenario, seconds: number) => {
      const target = s.tracing ? traced! : server!;
      const backendsBefore = await pids();
      const wal0 = await walLsn();
      const dbBefore = new Map(backendsBefore.map((p) => [p, cpuTimeMs([p])]));
      await getJson(`${target.url}/bench/statements`); // reset the counters
      const app0 = cpuTimeMs([target.pid]);
      const sample = await runLoad({
        url: target.url,
        path: s.path,
        connections: params.connections,
        durationSec: seconds,
        body: BODY,
        perRequestHeaders: headersFor(s),
        expectStatus: [201],
      });
      const app1 = cpuTimeMs([target.pid]);
      const walBytes = await walSince(wal0);
      const statements = (await getJson(`${target.url}/bench/statements`)) as Record<
        string,
        number
      >;
      let dbCpuMs = 0;
      for (const p of await pids()) dbCpuMs += cpuTimeMs([p]) - (dbBefore.get(p) ?? 0);
      return { sample, statements, appCpuMs: app1 - app0, dbCpuMs, walBytes };
    };

    ctx.log(`${kind}: warm-up, ${params.warmupSec} s per scenario`);
    for (const s of scenarios) await slice(s, params.warmupSec);

    const perScenario = new Map<string, Array<Awaited<ReturnType<typeof slice>>>>();
    const sliceSec = params.durationSec / params.rounds;
    const selfCpu0 = process.cpuUsage();
    const machine0 = machineCpuMs();
    let appDbSelfMs = 0;
    for (let round = 0; round < params.rounds; round++) {
      const order = round % 2 === 0 ? scenarios : [...scenarios].reverse();
      for (const s of order) {
        ctx.log(`${kind}: round ${round + 1}/${params.rounds}, ${s.id} for ${sliceSec} s`);
        const r = await slice(s, sliceSec);
        appDbSelfMs += r.appCpuMs + r.dbCpuMs;
        const list = perScenario.get(s.id) ?? [];
        list.push(r);
        perScenario.set(s.id, list);
      }
    }
    const self = process.cpuUsage(selfCpu0);
    const machine1 = machineCpuMs();
    let machine: DatabaseResult['machine'];
    if (machine0 && machine1 && canMeasureCpu()) {
      const total = machine1.total - machine0.total;
      const busy = machine1.busy - machine0.busy;
      const ours = appDbSelfMs + (self.user + self.system) / 1000;
      machine = {
        busyPct: (100 * busy) / total,
        othersPct: Math.max(0, (100 * (busy - ours)) / total),
      };
    }

    const results: ScenarioResult[] = scenarios.map((s) => {
      const runs = perScenario.get(s.id) ?? [];
      const sample = mergeSamples(runs.map((r) => r.sample));
      const statements: Record<string, number> = {};
      for (const r of runs) {
        for (const [k, v] of Object.entries(r.statements)) statements[k] = (statements[k] ?? 0) + v;
      }
      return {
        id: s.id,
        label: s.label,
        sample,
        rps: sample.ok / sample.durationSec,
        p50: percentile(sample.latencies, 0.5),
        p99: percentile(sample.latencies, 0.99),
        statements,
        appCpuMs: runs.reduce((a, r) => a + r.appCpuMs, 0),
        dbCpuMs: runs.reduce((a, r) => a + r.dbCpuMs, 0),
        walBytes: runs.reduce((a, r) => a + r.walBytes, 0),
      };
    });
    return { kind, version, scenarios: results, machine };
  } finally {
    await cleanup();
  }
}

/** Proves the routes do what the scenarios assume before anything is timed. */
async function sanityCheck(url: string): Promise<void> {
  const post = (path: string, key?: string) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: BODY,
    });
  const a = await post('/bench/payments/unguarded');
  if (a.status !== 201 || !a.headers.get('location')) {
    throw new Error(`unguarded POST answered ${a.status}: ${await a.text()}`);
  }
  for (const mode of ['transactional', 'leased']) {
    const key = `sanity-${mode}-${randomBytes(4).toString('hex')}`;
    const first = await post(`/bench/payments/${mode}`, key);
    const firstBody = await first.text();
    if (first.status !== 201 || first.headers.get('idempotency-replayed')) {
      throw new Error(`${mode} first execution answered ${first.status}: ${firstBody}`);
    }
    const again = await post(`/bench/payments/${mode}`, key);
    const againBody = await again.text();
    if (
      again.status !== 201 ||
      again.headers.get('idempotency-replayed') !== 'true' ||
      againBody !== firstBody
    ) {
      throw new Error(
        `${mode} replay answered ${again.status} (replayed=${again.headers.get('idempotency-replayed')}): ${againBody}`,
      );
    }
    const missing = await post(`/bench/payments/${mode}`);
    if (missing.status !== 400) {
      throw new Error(`${mode} without a key answered ${missing.status}, expected 400`);
    }
  }
}

/** Runs `n` first executions (8 at a time) and returns their keys, now completed. */
async function completeKeys(
  url: string,
  path: string,
  n: number,
  nextKey: () => string,
): Promise<string[]> {
  const keys: string[] = [];
  const worker = async () => {
    while (keys.length < n) {
      const key = nextKey();
      keys.push(key);
      const r = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: BODY,
      });
      await r.arrayBuffer();
      if (r.status !== 201) throw new Error(`completing key for ${path}: ${r.status}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return keys;
}

async function getJson(url: string): Promise<unknown> {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`GET ${url}: ${r.status}`);
  return r.json();
}

async function serverVersion(
  kind: BenchDatabaseKind,
  admin: DataSource | undefined,
): Promise<string> {
  if (kind === 'sqlite') {
    const Database = require('better-sqlite3');
    const mem = new Database(':memory:');
    try {
      return `SQLite ${mem.prepare('select sqlite_version() as v').get().v} (better-sqlite3, WAL)`;
    } finally {
      mem.close();
    }
  }
  const rows = await admin!.query(
    kind === 'postgres' ? "SELECT current_setting('server_version') AS v" : 'SELECT VERSION() AS v',
  );
  return `${kind === 'postgres' ? 'PostgreSQL' : 'MariaDB'} ${String(rows[0].v).split(' ')[0]}`;
}

function figuresTable(r: DatabaseResult, p: Params): BenchTable {
  const base = r.scenarios[0];
  const baseCpu = base ? cpuPerRequest(base) : NaN;
  return {
    title: `${r.version}, ${p.platform}, ${p.connections} connections, ${p.durationSec} s per scenario (${p.rounds} rounds), ${p.warmupSec} s warm-up`,
    columns: [
      'scenario',
      'req/s',
      'p50 ms',
      'p99 ms',
      '×(a)',
      'stmts/req',
      'app CPU µs/req',
      'DB CPU µs/req',
      'WAL B/req',
      'CPU ×(a)',
      'non-201',
    ],
    rows: r.scenarios.map((s) => [
      s.label,
      s.rps.toFixed(0),
      s.p50.toFixed(2),
      s.p99.toFixed(2),
      base ? (s.rps / base.rps).toFixed(2) : '-',
      totalStatements(s).toFixed(2),
      ((s.appCpuMs * 1000) / answered(s.sample)).toFixed(0),
      r.kind === 'postgres' ? ((s.dbCpuMs * 1000) / answered(s.sample)).toFixed(0) : '-',
      r.kind === 'postgres' ? (s.walBytes / answered(s.sample)).toFixed(0) : '-',
      (baseCpu / cpuPerRequest(s)).toFixed(2),
      String(s.sample.failed + s.sample.errors),
    ]),
  };
}

function statementsTable(r: DatabaseResult): BenchTable {
  const kinds = [...new Set(r.scenarios.flatMap((s) => Object.keys(s.statements)))].sort();
  return {
    title: `${dbName(r)}: SQL statements per request, by kind (counted by the app's TypeORM logger)`,
    columns: ['scenario', ...kinds, 'total'],
    rows: r.scenarios.map((s) => {
      const per = perRequest(s.statements, s.sample);
      return [
        s.label,
        ...kinds.map((k) => (per[k] ?? 0).toFixed(2)),
        totalStatements(s).toFixed(2),
      ];
    }),
  };
}

const dbName = (r: DatabaseResult) => r.version.split(' ')[0];
const answered = (s: LoadSample) => Math.max(1, s.ok + s.failed);
const cpuPerRequest = (s: ScenarioResult) => (s.appCpuMs + s.dbCpuMs) / answered(s.sample);
const totalStatements = (s: ScenarioResult) =>
  Object.values(s.statements).reduce((a, b) => a + b, 0) / answered(s.sample);
const round = (n: number, d: number) => Math.round(n * 10 ** d) / 10 ** d;
const mean = (v: number[]) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN);

function perRequest(counts: Record<string, number>, s: LoadSample): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, round(v / answered(s), 3)]));
}

function ratioOf(r: DatabaseResult, id: string): number | undefined {
  const base = r.scenarios.find((s) => s.id === 'unguarded');
  const s = r.scenarios.find((x) => x.id === id);
  return base && s ? s.rps / base.rps : undefined;
}
