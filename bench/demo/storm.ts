import { createIdempotentFetch, type FetchLike, type RetryEvent } from '../../lib/client';

export interface StormOptions {
  /** Base URL of the (flaky) way to the app. */
  url: string;
  payments: number;
  clients: number;
  timeoutMs: number;
  maxAttempts: number;
  /** Share of payments the server is asked to make slow (`X-Demo-Delay-Ms`), and how slow. */
  slowShare: number;
  slowMs: number;
  runId: string;
  /** A client that forgets its key between attempts (a new one on every attempt): to see duplicates. */
  naive: boolean;
  random: () => number;
  /** Aborts every call still running (the demo's overall time limit). */
  signal: AbortSignal;
}

/** What the clients saw, updated live. */
export interface StormStats {
  started: number;
  done: number;
  gaveUp: number;
  attempts: number;
  retries: Record<RetryEvent['reason'], number>;
  /** Final answers that carried Idempotency-Replayed: true (the first answer, replayed). */
  replayedAnswers: number;
  /** Payment ids the clients were answered with, by logical payment (customer id). */
  answered: Map<string, string>;
  failures: string[];
}

/** The customer id of the n-th logical payment of a run: one payment intended per customer. */
export const customerOf = (runId: string, n: number) => `demo-${runId}-${n}`;

/**
 * The retry storm: `clients` concurrent clients, each with its own createIdempotentFetch, share
 * `payments` logical payments (one per customer id) and send them through the flaky link.
 */
export async function runStorm(o: StormOptions, stats: StormStats): Promise<void> {
  let next = 0;
  const client = (): Promise<void> => {
    const counting: FetchLike = (input, init) => {
      stats.attempts++;
      if (!o.naive) return fetch(input, init);
      const headers = new Headers(init?.headers);
      headers.set('idempotency-key', crypto.randomUUID());
      return fetch(input, { ...init, headers });
    };
    const idempotentFetch = createIdempotentFetch({
      fetch: counting,
      timeoutMs: o.timeoutMs,
      maxAttempts: o.maxAttempts,
      baseDelayMs: 100,
      maxDelayMs: 2000,
      onRetry: (e) => stats.retries[e.reason]++,
    });
    const loop = async (): Promise<void> => {
      while (next < o.payments && !o.signal.aborted) {
        const n = next++;
        stats.started++;
        const customerId = customerOf(o.runId, n);
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (o.random() < o.slowShare) headers['x-demo-delay-ms'] = String(o.slowMs);
        try {
          const r = await idempotentFetch(`${o.url}/payments`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ amount: 10 + (n % 90), currency: 'EUR', customerId }),
            signal: o.signal,
          });
          const body = (await r.json()) as { id?: string };
          if (r.status === 201 && body.id) {
            stats.answered.set(customerId, body.id);
            if (r.headers.get('idempotency-replayed') === 'true') stats.replayedAnswers++;
          } else {
            stats.gaveUp++;
            stats.failures.push(`${customerId}: ${r.status} ${JSON.stringify(body)}`);
          }
        } catch (e) {
          stats.gaveUp++;
          stats.failures.push(`${customerId}: ${(e as Error).name}: ${(e as Error).message}`);
        }
        stats.done++;
      }
    };
    return loop();
  };
  await Promise.all(Array.from({ length: o.clients }, client));
}

export function emptyStormStats(): StormStats {
  return {
    started: 0,
    done: 0,
    gaveUp: 0,
    attempts: 0,
    retries: { 'network-error': 0, timeout: 0, 'in-progress': 0, status: 0 },
    replayedAnswers: 0,
    answered: new Map(),
    failures: [],
  };
}
