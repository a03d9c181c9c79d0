import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DataSource } from 'typeorm';
import type { BenchCheck, BenchContext, BenchSuite } from '../support/bench-suite';
import { runLoad } from '../support/load';
import { createScratchDatabase, isReachable, openAdmin } from '../support/scratch-database';
import type { ServerProcess } from '../support/server-process';
import { cpuTimeMs, spawnServer } from '../support/server-process';
import { RedisProbe } from './redis-probe';

/**
 * bench/peers: this library beside its peers, on one Nest 11 app and one endpoint (`POST
 * /payments`, one insert into PostgreSQL), in one interleaved run; then the crash probe (SIGKILL
 * mid-request, restart, retry). The app (`bench/peers/peers-server.js`) runs from the peers'
 * own install (`bench/peers/package.json` + lockfile, `npm ci` there); this library comes into
 * it from its packed tarball, as a user installs it (`npm run package`, `npm pack dist/package`),
 * or from `PEERS_TARBALL` (how the "before" figures of the README were taken).
 */

const PEERS_DIR = resolve(__dirname, '../../../bench/peers');
const ROOT = resolve(PEERS_DIR, '../..');
const SERVER = join(PEERS_DIR, 'peers-server.js');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const BODY = JSON.stringify({ customerId: 'bench', amount: 100 });

type Variant = 'lib' | 'lib-before' | 'ni-redis' | 'ni-memory' | 'ei-redis';

interface Scenario {
  id: string;
  label: string;
  variant: Variant;
  path: string;
  keys: 'none' | 'fresh' | 'replay';
}

const SCENARIOS: Scenario[] = [
  {
    id: 'a',
    label: '(a) no idempotency, autocommit insert',
    variant: 'lib',
    path: '/a',
    keys: 'none',
  },
  {
    id: 'a-tx',
    label: '(a-tx) same insert in a transaction',
    variant: 'lib',
    path: '/a-tx',
    keys: 'none',
  },
  {
    id: 'lib-tx',
    label: 'this library, transactional, first execution',
    variant: 'lib',
    path: '/payments',
    keys: 'fresh',
  },
  {
    id: 'lib-leased',
    label: 'this library, leased, first execution',
    variant: 'lib',
    path: '/payments-leased',
    keys: 'fresh',
  },
  {
    id: 'lib-replay',
    label: 'this library, replay',
    variant: 'lib',
    path: '/payments',
    keys: 'replay',
  },
  {
    id: 'before-tx',
    label: 'BEFORE build: transactional, first execution',
    variant: 'lib-before',
    path: '/payments',
    keys: 'fresh',
  },
  {
    id: 'before-leased',
    label: 'BEFORE build: leased, first execution',
    variant: 'lib-before',
    path: '/payments-leased',
    keys: 'fresh',
  },
  {
    id: 'before-replay',
    label: 'BEFORE build: replay',
    variant: 'lib-before',
    path: '/payments',
    keys: 'replay',
  },
  {
    id: 'ni-redis',
    label: 'node-idempotency + Redis, first execution',
    variant: 'ni-redis',
    path: '/payments',
    keys: 'fresh',
  },
  {
    id: 'ni-redis-replay',
    label: 'node-idempotency + Redis, replay',
    variant: 'ni-redis',
    path: '/payments',
    keys: 'replay',
  },
  {
    id: 'ni-memory',
    label: 'node-idempotency + memory, first execution',
    variant: 'ni-memory',
    path: '/payments',
    keys: 'fresh',
  },
  {
    id: 'ni-memory-replay',
    label: 'node-idempotency + memory, replay',
    variant: 'ni-memory',
    path: '/payments',
    keys: 'replay',
  },
  {
    id: 'ei-redis',
    label: 'express-idempotency + Redis, first execution',
    variant: 'ei-redis',
    path: '/payments',
    keys: 'fresh',
  },
  {
    id: 'ei-redis-replay',
    label: 'express-idempotency + Redis, replay',
    variant: 'ei-redis',
    path: '/payments',
    keys: 'replay',
  },
];

/** The crash probe's subjects: a route and how it is wired. */
const PROBES: Array<{ label: string; variant: Variant; path: string }> = [
  { label: 'this library, transactional', variant: 'lib', path: '/payments' },
  { label: 'this library, leased (lease 5 s)', variant: 'lib', path: '/payments-leased' },
  { label: 'node-idempotency + Redis', variant: 'ni-redis', path: '/payments' },
  { label: 'node-idempotency + memory', variant: 'ni-memory', path: '/payments' },
  { label: 'express-idempotency + Redis', variant: 'ei-redis', path: '/payments' },
];

interface Round {
  reqPerSec: number;
  cpuUsPerReq: number;
  appUs: number;
  pgUs: number;
  redisUs: number;
  statements: number;
  redisCommands: number;
  failed: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};

function arg(args: string[], name: string): string | undefined {
  const hit = args.find((a) => a.startsWith(`--${name}=`));
  return hit?.slice(name.length + 3);
}

/** Installs this library into bench/peers from its tarball (built here unless PEERS_TARBALL). */
function installLibrary(ctx: BenchContext): string {
  if (!existsSync(join(PEERS_DIR, 'node_modules', '@node-idempotency'))) {
    ctx.log('installing the peers (npm ci in bench/peers)');
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: PEERS_DIR, stdio: 'ignore' });
  }
  let tarball = process.env.PEERS_TARBALL;
  if (!tarball) {
    const out = join(PEERS_DIR, '.lib');
    mkdirSync(out, { recursive: true });
    ctx.log('packing the library (npm run package, npm pack dist/package)');
    execFileSync('npm', ['run', 'package'], { cwd: ROOT, stdio: 'ignore' });
    // './': a bare `dist/package` would be read as a GitHub repository.
    execFileSync('npm', ['pack', './dist/package', '--pack-destination', out], {
      cwd: ROOT,
      stdio: 'ignore',
    });
    const name = readdirSync(out).find((f) => f.endsWith('.tgz'));
    if (!name) throw new Error('npm pack produced no tarball');
    tarball = join(out, name);
  }
  ctx.log(`installing ${tarball} into bench/peers`);
  execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', resolve(tarball)], {
    cwd: PEERS_DIR,
    stdio: 'ignore',
  });
  return tarball;
}

/**
 * `PEERS_BEFORE_TARBALL=<file.tgz>`: another build of this library, unpacked beside the installed
 * one (its peers resolve to the same Nest, TypeORM and nestjs-cls copies), run as a second app in
 * the same interleaved rounds: before and after side by side.
 */
function unpackBefore(ctx: BenchContext): string | undefined {
  const tarball = process.env.PEERS_BEFORE_TARBALL;
  if (!tarball) return undefined;
  const dir = join(PEERS_DIR, '.lib', 'before');
  const target = join(dir, 'node_modules', 'nestjs-exactly-once');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  execFileSync('tar', ['xzf', resolve(tarball), '-C', target, '--strip-components=1']);
  ctx.log(`before build: ${tarball}`);
  return dir;
}

const suite: BenchSuite = {
  description:
    'This library vs @node-idempotency/nestjs (Redis, memory) and express-idempotency (Redis) on one Nest 11 app, PostgreSQL; plus a crash probe',
  maxDurationMs: 15 * 60_000,
  async run(ctx) {
    if (!(await isReachable('postgres')))
      throw new Error('PostgreSQL is not reachable on 127.0.0.1:5432');
    const rounds = ctx.quick ? 1 : Number(arg(ctx.args, 'rounds') ?? 3);
    const sliceSec = ctx.quick ? 1 : Number(arg(ctx.args, 'duration') ?? 4);
    const warmupSec = 1;
    const connections = 32;
    const tarball = installLibrary(ctx);
    const beforeDir = unpackBefore(ctx);
    const scenarios = SCENARIOS.filter((s) => beforeDir || s.variant !== 'lib-before');

    const db = await createScratchDatabase('postgres');
    ctx.onCleanup(() => db.drop());
    const admin = await openAdmin('postgres');
    ctx.onCleanup(() => admin.destroy());
    const own = new DataSource({ type: 'postgres', url: db.url });
    await own.initialize();
    await own.query(
      'CREATE TABLE payments (id uuid PRIMARY KEY, customer_id text NOT NULL, amount int NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
    );
    await own.query('CREATE INDEX payments_customer ON payments (customer_id)');
    ctx.onCleanup(() => own.destroy());
    const redis = await RedisProbe.open(REDIS_URL);
    ctx.onCleanup(() => redis.close());

    const env = (variant: Variant): Record<string, string> => ({
      VARIANT: variant,
      PG_URL: db.url,
      REDIS_URL,
      ...(variant === 'lib-before' ? { LIB_DIR: beforeDir! } : {}),
    });
    const start = (variant: Variant) =>
      spawnServer({ script: SERVER, env: env(variant), readyTimeoutMs: 90_000 });
    const servers = new Map<Variant, ServerProcess>();
    ctx.onCleanup(async () => {
      for (const s of servers.values()) await s.stop();
    });
    const variants: Variant[] = ['lib', 'ni-redis', 'ni-memory', 'ei-redis'];
    if (beforeDir) variants.splice(1, 0, 'lib-before');
    for (const v of variants) {
      ctx.log(`starting the ${v} app`);
      servers.set(v, await start(v));
    }

    const runId = Date.now().toString(36);
    let seq = 0;
    const freshKey = () => `${runId}-${(seq++).toString(36)}`;
    const post = async (url: string, key: string | undefined, body = BODY, extra = {}) => {
      const r = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(key ? { 'idempotency-key': key } : {}),
          ...extra,
        },
        body,
      });
      return { status: r.status, text: await r.text() };
    };

    // Replays: keys completed beforehand, more of them than connections (no two concurrent
    // requests share a key).
    const pools = new Map<string, string[]>();
    for (const s of scenarios.filter((x) => x.keys === 'replay')) {
      const url = servers.get(s.variant)!.url + s.path;
      const keys: string[] = [];
      for (let i = 0; i < connections * 2; i++) {
        const k = freshKey();
        const r = await post(url, k);
        if (r.status !== 201)
          throw new Error(`${s.id}: completing a key answered ${r.status} ${r.text}`);
        keys.push(k);
      }
      // Sanity: the replay answers the same bytes.
      const again = await post(url, keys[0]);
      if (again.status !== 201) throw new Error(`${s.id}: replay answered ${again.status}`);
      pools.set(s.id, keys);
    }
    const headersFor = (s: Scenario): (() => Record<string, string>) => {
      if (s.keys === 'none') return () => ({});
      if (s.keys === 'fresh') return () => ({ 'idempotency-key': freshKey() });
      const pool = pools.get(s.id)!;
      let i = 0;
      return () => ({ 'idempotency-key': pool[i++ % pool.length] });
    };

    const backends = async (variant: Variant): Promise<number[]> =>
      (
        await admin.query(
          'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2',
          [db.name, `peers-${variant}`],
        )
      ).map((r: { pid: number }) => Number(r.pid));

    type Traffic = { statements: Record<string, number>; completed: number; inFlight: number };
    const traffic = async (url: string): Promise<Traffic> =>
      (await (await fetch(`${url}/bench/statements`)).json()) as Traffic;
    /** Waits until the app has answered every request sent to it (the slice's tail included). */
    const drained = async (url: string): Promise<Traffic> => {
      const sum: Traffic = { statements: {}, completed: 0, inFlight: 0 };
      for (let i = 0; i < 600; i++) {
        const t = await traffic(url);
        for (const [k, n] of Object.entries(t.statements))
          sum.statements[k] = (sum.statements[k] ?? 0) + n;
        sum.completed += t.completed;
        if (t.inFlight === 0) return sum;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`${url}: requests still in flight after 30 s`);
    };

    const slice = async (s: Scenario, seconds: number): Promise<Round> => {
      const server = servers.get(s.variant)!;
      await drained(server.url); // nothing in flight, counters reset
      const pg0 = new Map((await backends(s.variant)).map((p) => [p, cpuTimeMs([p])]));
      const redisCpu0 = await redis.cpuMs();
      const redisCmd0 = await redis.commands();
      const app0 = cpuTimeMs([server.pid]);
      const sample = await runLoad({
        url: server.url,
        path: s.path,
        connections,
        durationSec: seconds,
        body: BODY,
        perRequestHeaders: headersFor(s),
        expectStatus: [201],
      });
      // The requests in flight when the load stopped finish first: their work counts, and so do they.
      const done = await drained(server.url);
      const app1 = cpuTimeMs([server.pid]);
      const redisCmd1 = await redis.commands();
      const redisCpu1 = await redis.cpuMs();
      let pgMs = 0;
      for (const p of await backends(s.variant)) pgMs += cpuTimeMs([p]) - (pg0.get(p) ?? 0);
      const counts = done.statements;
      const n = Math.max(1, done.completed);
      const appUs = ((app1 - app0) * 1000) / n;
      const pgUs = (pgMs * 1000) / n;
      const redisUs = ((redisCpu1 - redisCpu0) * 1000) / n;
      return {
        reqPerSec: sample.ok / sample.durationSec,
        cpuUsPerReq: appUs + pgUs + redisUs,
        appUs,
        pgUs,
        redisUs,
        statements: Object.values(counts).reduce((a, b) => a + b, 0) / n,
        redisCommands: Math.max(0, redisCmd1 - redisCmd0 - 1) / n,
        failed: sample.failed + sample.errors,
      };
    };

    ctx.log(`warm-up, ${warmupSec} s per scenario`);
    for (const s of scenarios) await slice(s, warmupSec);
    const results = new Map<string, Round[]>();
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? scenarios : [...scenarios].reverse();
      for (const s of order) {
        ctx.log(`round ${round + 1}/${rounds}: ${s.id} for ${sliceSec} s`);
        const r = await slice(s, sliceSec);
        results.set(s.id, [...(results.get(s.id) ?? []), r]);
      }
    }
    const med = (id: string, f: (r: Round) => number) => median(results.get(id)!.map(f));
    const aRate = med('a', (r) => r.reqPerSec);
    const aTxCpu = med('a-tx', (r) => r.cpuUsPerReq);
    const rows = scenarios.map((s) => [
      s.label,
      Math.round(med(s.id, (r) => r.reqPerSec)),
      (med(s.id, (r) => r.reqPerSec) / aRate).toFixed(2),
      Math.round(med(s.id, (r) => r.cpuUsPerReq)),
      `${Math.round(med(s.id, (r) => r.appUs))} / ${Math.round(med(s.id, (r) => r.pgUs))} / ${Math.round(med(s.id, (r) => r.redisUs))}`,
      med(s.id, (r) => r.statements).toFixed(1),
      med(s.id, (r) => r.redisCommands).toFixed(1),
      results.get(s.id)!.reduce((a, r) => a + r.failed, 0),
    ]);

    // Crash probe: SIGKILL mid-request, restart, retry with the same key and body.
    ctx.log('crash probe');
    for (const s of servers.values()) await s.stop();
    servers.clear();
    const probeRows: Array<Array<string | number>> = [];
    const waitSec = ctx.quick ? 3 : 8;
    for (const p of PROBES) {
      const customer = `crash-${runId}-${p.variant}-${p.path.replace(/\W/g, '')}`;
      const body = JSON.stringify({ customerId: customer, amount: 1 });
      const key = freshKey();
      let server = await start(p.variant);
      const inFlight = post(server.url + p.path, key, body, { 'x-delay-ms': '5000' }).catch(
        () => undefined,
      );
      // The handler has inserted its payment and sleeps: kill the process there.
      await new Promise((r) => setTimeout(r, 800));
      server.child.kill('SIGKILL');
      await inFlight;
      await new Promise((r) => server.child.once('exit', r).unref?.() ?? r(undefined));
      server = await start(p.variant);
      const t0 = Date.now();
      let first = await post(server.url + p.path, key, body);
      let status = first.status;
      while (status !== 201 && Date.now() - t0 < waitSec * 1000) {
        await new Promise((r) => setTimeout(r, 500));
        first = await post(server.url + p.path, key, body);
        status = first.status;
      }
      const stuckMs = Date.now() - t0;
      const payments = Number(
        (
          await own.query('SELECT COUNT(*) AS n FROM payments WHERE customer_id = $1', [customer])
        )[0].n,
      );
      let outcome: string;
      if (status === 201)
        outcome = `${payments === 1 ? 'executes once' : `executes ${payments} times`}${stuckMs > 400 ? ` (409 for ${(stuckMs / 1000).toFixed(1)} s first)` : ''}`;
      else {
        const held = p.variant.endsWith('redis') ? await redis.keysContaining(key) : [];
        const ttl = Math.max(-1, ...held.map((h) => h.pttl));
        outcome = `stuck: ${status} after ${waitSec} s${ttl > 0 ? `, key held ${(ttl / 3_600_000).toFixed(1)} h more` : ''} (payments: ${payments})`;
      }
      probeRows.push([p.label, String(status), payments, outcome]);
      await server.stop();
    }

    const cpu = (id: string) => med(id, (r) => r.cpuUsPerReq);
    const rate = (id: string) => med(id, (r) => r.reqPerSec);
    const checks: BenchCheck[] = [
      {
        name: 'replay CPU/request ≤ node-idempotency + Redis',
        target: `≤ ${Math.round(cpu('ni-redis-replay'))} µs`,
        actual: `${Math.round(cpu('lib-replay'))} µs`,
        ok: cpu('lib-replay') <= cpu('ni-redis-replay'),
      },
      {
        name: 'replay req/s ≥ node-idempotency + Redis',
        target: `≥ ${Math.round(rate('ni-redis-replay'))}`,
        actual: `${Math.round(rate('lib-replay'))}`,
        ok: rate('lib-replay') >= rate('ni-redis-replay'),
      },
      {
        name: 'first execution, transactional: CPU/request ≤ 1.4 × (a-tx)',
        target: '≤ 1.40',
        actual: (cpu('lib-tx') / aTxCpu).toFixed(2),
        ok: cpu('lib-tx') / aTxCpu <= 1.4,
      },
    ];
    if (beforeDir)
      checks.push(
        {
          name: 'BEFORE build: replay CPU/request ≤ node-idempotency + Redis',
          target: `≤ ${Math.round(cpu('ni-redis-replay'))} µs`,
          actual: `${Math.round(cpu('before-replay'))} µs`,
          ok: cpu('before-replay') <= cpu('ni-redis-replay'),
          informative: true,
        },
        {
          name: 'BEFORE build: first execution, transactional: CPU/request ÷ (a-tx)',
          target: '≤ 1.40',
          actual: (cpu('before-tx') / aTxCpu).toFixed(2),
          ok: cpu('before-tx') / aTxCpu <= 1.4,
          informative: true,
        },
      );
    return {
      tables: [
        {
          title: `Peers on PostgreSQL: POST /payments, one insert, Nest 11, ${connections} connections, medians of ${rounds} interleaved rounds of ${sliceSec} s`,
          columns: [
            'scenario',
            'req/s',
            '× (a)',
            'CPU µs/req',
            'app / PG / Redis',
            'PG stmts/req',
            'Redis cmds/req',
            'non-201',
          ],
          rows,
        },
        {
          title:
            'Crash probe: SIGKILL while the handler runs (after its insert), restart, retry the same key and body',
          columns: ['peer', 'retry status', 'payments', 'outcome'],
          rows: probeRows,
        },
      ],
      checks,
      notes: [
        `library: ${tarball}`,
        'CPU µs/req: the app process, its PostgreSQL backends (by application_name) and the Redis server (INFO cpu), from /proc and Redis, per request the app answered in the slice (its tail, answered after the load stopped, included); PG statements per request likewise; medians over rounds.',
        "Redis cmds/req: total_commands_processed of the Redis server over the slice (the probe's own INFO call removed).",
        'The crash probe kills the process 0.8 s into a 5 s handler; the retry is repeated every 0.5 s while it is refused.',
      ],
      data: { results: Object.fromEntries(results), probe: probeRows },
    };
  },
};

export default suite;
