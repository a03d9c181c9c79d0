import { Agent, request } from 'node:http';

/**
 * What a client saw for one HTTP attempt: a whole answer (status, headers, body), or no usable
 * answer (`error`: refused, reset, timed out, or a body cut short by a crash).
 */
export interface Attempt {
  target: string;
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body?: Buffer;
  error?: string;
}

/** Everything that happened to one idempotency key, as its client saw it. */
export interface KeyOutcome {
  key: string;
  customerId: string;
  attempts: Attempt[];
  /** The 201 the client ended with (it was told about this payment). */
  created?: Attempt;
}

/**
 * Keep-alive agents, one per target process, with a bound on sockets (modest concurrency). An
 * idle socket is closed by the client after 4 s, before Node's server closes it after 5 s
 * (`keepAliveTimeout`): a request never goes out on a socket the server is closing.
 */
const agents = new Map<string, Agent>();
export function agentFor(target: string, maxSockets = 64): Agent {
  let agent = agents.get(target);
  if (!agent) {
    agent = new Agent({ keepAlive: true, maxSockets, timeout: 4000 });
    agents.set(target, agent);
  }
  return agent;
}

/** Closes every keep-alive socket (end of a suite). */
export function closeAgents(): void {
  for (const a of agents.values()) a.destroy();
  agents.clear();
}

export const paymentBody = (customerId: string, amount = 12.5) =>
  JSON.stringify({ amount, currency: 'USD', customerId });

/**
 * One `POST /payments` over a keep-alive agent. The body must arrive whole: a response whose
 * body stops short of its Content-Length (the process died while writing it) is an error, not
 * an answer, exactly as a real client library reports it.
 */
export function postOnce(
  target: string,
  key: string,
  body: string,
  headers: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<Attempt> {
  const u = new URL('/payments', target);
  return new Promise((resolve) => {
    let settled = false;
    const done = (a: Attempt) => {
      if (settled) return;
      settled = true;
      resolve(a);
    };
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent: agentFor(target),
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'idempotency-key': key,
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('aborted', () =>
          done({ target, error: `response aborted after ${res.statusCode}` }),
        );
        res.on('error', (e) => done({ target, error: `response ${res.statusCode}: ${e.message}` }));
        res.on('end', () => {
          if (!res.complete) return done({ target, error: `truncated ${res.statusCode} response` });
          done({
            target,
            status: res.statusCode,
            headers: res.headers,
            body: Buffer.concat(chunks),
          });
        });
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', (e) => done({ target, error: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.end(body);
  });
}

export interface RetryPolicy {
  /** Where the next attempt goes (attempt 0 is the first try); a real client's load balancer. */
  target(attempt: number): string | Promise<string>;
  /** Gives up after this long (the test then fails: every key must end with an answer). */
  deadlineMs?: number;
  /** Longest pause between two attempts without a Retry-After. */
  maxBackoffMs?: number;
  headers?: (attempt: number) => Record<string, string>;
  /** Called with each attempt's answer as it arrives (before any retry). */
  onAttempt?: (attempt: Attempt) => void;
}

/**
 * Sends `POST /payments` with one key until it gets its 201, as a careful client does: the same
 * key and body on every retry; a retry after a connection error or a 5xx with exponential
 * backoff and jitter; after a 409 it waits what Retry-After says. Any other answer stops it
 * (the caller's assertions then show it).
 */
export async function postUntilCreated(
  key: string,
  customerId: string,
  policy: RetryPolicy,
  outcome: KeyOutcome = { key, customerId, attempts: [] },
): Promise<KeyOutcome> {
  const body = paymentBody(customerId);
  const deadline = Date.now() + (policy.deadlineMs ?? 90_000);
  const maxBackoff = policy.maxBackoffMs ?? 1000;
  for (let n = outcome.attempts.length; Date.now() < deadline; n++) {
    const a = await postOnce(await policy.target(n), key, body, policy.headers?.(n));
    outcome.attempts.push(a);
    policy.onAttempt?.(a);
    if (a.status === 201) {
      outcome.created = a;
      return outcome;
    }
    if (a.status !== undefined && a.status !== 409 && a.status < 500) return outcome;
    const retryAfter = Number(header(a, 'retry-after'));
    const pause =
      retryAfter > 0
        ? retryAfter * 1000
        : Math.min(maxBackoff, 25 * 2 ** Math.min(n, 10)) * (0.5 + Math.random() / 2);
    await new Promise((r) => setTimeout(r, pause));
  }
  return outcome;
}

export function header(a: Attempt, name: string): string | undefined {
  const v = a.headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Runs `task` over `items` with at most `concurrency` at a time. */
export async function pool<T, R>(
  items: readonly T[],
  concurrency: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await task(items[i], i);
    }),
  );
  return out;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Opens every pooled database connection of each process before a storm: `connections`
 * overlapping payments on distinct keys (`warm-…` customers, outside every scenario's prefix),
 * each held 300 ms in its handler. On Babelfish a pooled connection is a new PostgreSQL backend
 * whose first batch starts about a second late (more on a loaded machine); a storm that opens a
 * whole pool of them at once, 200 requests queued behind it, can outlast the driver's 15 s
 * request time-out (a retryable 503). A running service's pool is warm.
 */
export async function warmPools(targets: string[], connections = 10): Promise<void> {
  await Promise.all(
    targets.flatMap((t) =>
      Array.from({ length: connections }, (_, i) => {
        const customerId = `warm-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}-${i}`;
        return postUntilCreated(`warm-${customerId}`, customerId, {
          target: () => t,
          headers: () => ({ 'x-demo-delay-ms': '300' }),
        });
      }),
    ),
  );
}
