import autocannon = require('autocannon');

/** One load slice: `connections` keep-alive connections hammering one route for `durationSec`. */
export interface LoadSpec {
  url: string;
  path: string;
  method?: string;
  connections: number;
  durationSec: number;
  body?: string;
  headers?: Record<string, string>;
  /** Extra headers per request, computed right before it is sent (e.g. a fresh Idempotency-Key). */
  perRequestHeaders?: () => Record<string, string>;
  /** Status codes that count as success (default: any 2xx). */
  expectStatus?: number[];
}

/** What a slice measured. Latencies are every response's time in ms (for merging slices). */
export interface LoadSample {
  durationSec: number;
  ok: number;
  failed: number;
  errors: number;
  statuses: Record<string, number>;
  latencies: number[];
}

/** Runs one slice with autocannon in this process and records every response's latency. */
export async function runLoad(spec: LoadSpec): Promise<LoadSample> {
  const perRequest = spec.perRequestHeaders;
  const expected = spec.expectStatus;
  const isOk = (s: number) => (expected ? expected.includes(s) : s >= 200 && s < 300);
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  let errors = 0;
  const started = process.hrtime.bigint();
  const instance = autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationSec,
    timeout: 30,
    requests: [
      {
        method: spec.method ?? 'POST',
        path: spec.path,
        headers: { 'content-type': 'application/json', ...spec.headers },
        body: spec.body,
        setupRequest: perRequest
          ? (req) => {
              Object.assign(req.headers!, perRequest());
              return req;
            }
          : undefined,
      },
    ],
  });
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (isOk(status)) {
      ok++;
      latencies.push(ms);
    } else failed++;
  });
  instance.on('reqError', () => errors++);
  await instance;
  const durationSec = Number(process.hrtime.bigint() - started) / 1e9;
  return { durationSec, ok, failed, errors, statuses, latencies };
}

/** Merges slices of the same scenario (rounds) into one sample. */
export function mergeSamples(samples: LoadSample[]): LoadSample {
  const out: LoadSample = {
    durationSec: 0,
    ok: 0,
    failed: 0,
    errors: 0,
    statuses: {},
    latencies: [],
  };
  for (const s of samples) {
    out.durationSec += s.durationSec;
    out.ok += s.ok;
    out.failed += s.failed;
    out.errors += s.errors;
    for (const [k, v] of Object.entries(s.statuses)) out.statuses[k] = (out.statuses[k] ?? 0) + v;
    for (const l of s.latencies) out.latencies.push(l);
  }
  return out;
}

/** The q-quantile (0..1) of the values (nearest rank). */
export function percentile(values: number[], q: number): number {
  if (!values.length) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}
