import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { BenchContext, BenchReport, BenchSuite, BenchTable } from '../support/bench-suite';
import { type LoadSample, mergeSamples, percentile, runLoad } from '../support/load';
import {
  type BenchDatabaseKind,
  createScratchDatabase,
  isReachable,
} from '../support/scratch-database';
import { cpuTimeMs, type ServerProcess, spawnServer } from '../support/server-process';

/**
 * bench/graphql-overhead: what `@Idempotent()` costs on a GraphQL mutation (Apollo on Express),
 * beside the same body without the gate and beside the guarded REST route. One server process
 * per database (bench/http-overhead's app with POST /graphql), loaded by autocannon over
 * loopback; scenarios interleaved in rounds; app CPU per answered request from /proc.
 */
interface Scenario {
  id: string;
  label: string;
  path: string;
  body: string;
  keys: 'fresh' | 'replay' | 'none';
}

const INPUT = { amount: 12.5, currency: 'USD', customerId: 'bench-customer-1' };
const gqlBody = (field: string) =>
  JSON.stringify({
    query: `mutation($i: BenchPaymentInput!) { ${field}(input: $i) { id amount currency customerId status } }`,
    variables: { i: INPUT },
  });

const SCENARIOS: Scenario[] = [
  {
    id: 'gql-unguarded',
    label: '(a) GraphQL mutation, no gate (tx + insert)',
    path: '/graphql',
    body: gqlBody('createPaymentUnguarded'),
    keys: 'none',
  },
  {
    id: 'gql-first',
    label: '(b) GraphQL mutation, @Idempotent() first execution',
    path: '/graphql',
    body: gqlBody('createPayment'),
    keys: 'fresh',
  },
  {
    id: 'gql-replay',
    label: '(c) GraphQL mutation, @Idempotent() replay',
    path: '/graphql',
    body: gqlBody('createPayment'),
    keys: 'replay',
  },
  {
    id: 'rest-first',
    label: '(b) REST POST, @Idempotent() first execution',
    path: '/bench/payments/transactional',
    body: JSON.stringify(INPUT),
    keys: 'fresh',
  },
  {
    id: 'rest-replay',
    label: '(c) REST POST, @Idempotent() replay',
    path: '/bench/payments/transactional',
    body: JSON.stringify(INPUT),
    keys: 'replay',
  },
];

interface Result {
  id: string;
  label: string;
  sample: LoadSample;
  appCpuMs: number;
}

const SUITE_LIMIT_MS = 6 * 60_000;

function params(ctx: BenchContext) {
  const get = (name: string) =>
    ctx.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const databases = (get('db') ?? 'postgres,sqlite').split(',') as BenchDatabaseKind[];
  return {
    databases,
    connections: Number(get('connections') ?? 32),
    durationSec: Number(get('duration') ?? (ctx.quick ? 2 : 6)),
    rounds: Number(get('rounds') ?? (ctx.quick ? 1 : 3)),
    replayKeys: Number(get('replay-keys') ?? 200),
  };
}

const suite: BenchSuite = {
  description:
    'GraphQL overhead of @Idempotent() (Apollo/Express): mutation without the gate vs first execution vs replay, and the REST route',
  maxDurationMs: SUITE_LIMIT_MS,

  async run(ctx) {
    const p = params(ctx);
    const tables: BenchTable[] = [];
    const notes: string[] = [];
    const data: unknown[] = [];
    const load0 = loadavg();
    for (const kind of p.databases) {
      if (!(await isReachable(kind))) {
        notes.push(`${kind}: not reachable, skipped.`);
        continue;
      }
      const results = await benchDatabase(kind, p, ctx);
      const base = results[0];
      const rps = (r: Result) => answered(r.sample) / r.sample.durationSec;
      const cpu = (r: Result) => (r.appCpuMs * 1000) / answered(r.sample);
      tables.push({
        title: `GraphQL mutation vs REST route, ${kind}, ${p.connections} connections`,
        columns: ['scenario', 'req/s', '×(a)', 'p50 ms', 'p99 ms', 'app CPU µs/req', 'non-2xx'],
        rows: results.map((r) => [
          r.label,
          rps(r).toFixed(0),
          (rps(r) / rps(base)).toFixed(2),
          percentile(r.sample.latencies, 0.5).toFixed(1),
          percentile(r.sample.latencies, 0.99).toFixed(1),
          cpu(r).toFixed(0),
          r.sample.failed + r.sample.errors,
        ]),
      });
      data.push({
        database: kind,
        scenarios: results.map((r) => ({
          id: r.id,
          requestsPerSecond: Math.round(rps(r)),
          appCpuUsPerRequest: Math.round(cpu(r)),
          ok: r.sample.ok,
          failed: r.sample.failed,
          errors: r.sample.errors,
        })),
      });
    }
    const load1 = loadavg();
    notes.push(
      `Machine: ${cpus().length} cores, Node ${process.version}; load average ${load0[0].toFixed(2)} before, ${load1[0].toFixed(2)} after.`,
      'App CPU µs/req: CPU time of the server process per answered request (/proc); autocannon and the database share the cores.',
      `Replays round-robin over ${p.replayKeys} completed keys (more than the connections: no two concurrent requests share a key).`,
    );
    return { tables, notes, data: { params: p, results: data } } satisfies BenchReport;
  },
};

export default suite;

const answered = (s: LoadSample) => Math.max(1, s.ok);

async function benchDatabase(
  kind: BenchDatabaseKind,
  p: ReturnType<typeof params>,
  ctx: BenchContext,
): Promise<Result[]> {
  const db = await createScratchDatabase(kind);
  let server: ServerProcess | undefined;
  const cleanup = async () => {
    await server?.stop();
    await db.drop().catch(() => undefined);
  };
  ctx.onCleanup(cleanup);
  try {
    server = await spawnServer({
      script: join(__dirname, 'graphql-bench-server.js'),
      env: { DB_URL: db.url },
    });
    const url = server.url;
    const runId = randomBytes(4).toString('hex');
    let seq = 0;
    const freshKey = () => `${runId}-${(seq++).toString(36)}`;
    const post = async (s: Scenario, key?: string) => {
      const r = await fetch(`${url}${s.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
        body: s.body,
      });
      const text = await r.text();
      if (!r.ok || text.includes('"errors"')) {
        throw new Error(`${s.id}: ${r.status} ${text.slice(0, 300)}`);
      }
      return r;
    };
    // Sanity: each scenario answers, and a replay is a replay.
    const pools: Record<string, string[]> = {};
    for (const s of SCENARIOS) {
      await post(s, s.keys === 'none' ? undefined : freshKey());
      if (s.keys !== 'replay') continue;
      ctx.log(`${kind}: completing ${p.replayKeys} keys for ${s.id}`);
      const pool: string[] = [];
      for (let i = 0; i < p.replayKeys; i++) {
        const k = freshKey();
        await post(s, k);
        pool.push(k);
      }
      const replayed = await post(s, pool[0]);
      if (replayed.headers.get('idempotency-replayed') !== 'true') {
        throw new Error(`${s.id}: the retry was not a replay`);
      }
      pools[s.id] = pool;
    }
    const headersFor = (s: Scenario) => {
      if (s.keys === 'none') return () => ({});
      if (s.keys === 'fresh') return () => ({ 'idempotency-key': freshKey() });
      const pool = pools[s.id];
      let i = 0;
      return () => ({ 'idempotency-key': pool[i++ % pool.length] });
    };
    const slices = new Map<string, { samples: LoadSample[]; cpuMs: number }>();
    for (const s of SCENARIOS) slices.set(s.id, { samples: [], cpuMs: 0 });
    // Warm-up, then interleaved rounds (forward, backward, ...).
    for (const s of SCENARIOS) {
      await runLoad({
        url,
        path: s.path,
        connections: p.connections,
        durationSec: 1,
        body: s.body,
        perRequestHeaders: headersFor(s),
      });
    }
    for (let round = 0; round < p.rounds; round++) {
      const order = round % 2 === 0 ? SCENARIOS : [...SCENARIOS].reverse();
      for (const s of order) {
        ctx.log(`${kind}: round ${round + 1}/${p.rounds}, ${s.id}`);
        const cpu0 = cpuTimeMs([server.pid]);
        const sample = await runLoad({
          url,
          path: s.path,
          connections: p.connections,
          durationSec: p.durationSec,
          body: s.body,
          perRequestHeaders: headersFor(s),
        });
        const slice = slices.get(s.id)!;
        slice.samples.push(sample);
        slice.cpuMs += cpuTimeMs([server.pid]) - cpu0;
      }
    }
    return SCENARIOS.map((s) => ({
      id: s.id,
      label: s.label,
      sample: mergeSamples(slices.get(s.id)!.samples),
      appCpuMs: slices.get(s.id)!.cpuMs,
    }));
  } finally {
    await cleanup();
  }
}
