import {
  backoffDelay,
  IN_PROGRESS_PROBLEM_TYPE,
  isRetryableStatus,
  LEASE_LOST_PROBLEM_TYPE,
  parseRetryAfter,
  retryDelay,
  retryReasonOf,
} from '../../lib/client';

const problem = (status: number, type: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type, title: 't', status }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 10, 24, 12, 0, 0);

  it('reads delta-seconds as milliseconds', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(' 59 ', now)).toBe(59_000);
  });

  it('reads an HTTP-date as the time left until it, 0 once it is past', () => {
    expect(parseRetryAfter(new Date(now + 5000).toUTCString(), now)).toBe(5000);
    expect(parseRetryAfter('Tue, 24 Nov 2026 12:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter(new Date(now - 60_000).toUTCString(), now)).toBe(0);
  });

  it('ignores an absent or unreadable value', () => {
    for (const v of [null, undefined, '', '  ', 'soon', '-1', '1.5', '+3', 'NaN']) {
      expect(parseRetryAfter(v, now)).toBeUndefined();
    }
  });
});

describe('back-off with full jitter', () => {
  it('grows exponentially from baseDelayMs and draws uniformly below the ceiling', () => {
    const almostOne = () => 0.999999;
    expect(backoffDelay(1, 100, 10_000, almostOne)).toBe(99);
    expect(backoffDelay(2, 100, 10_000, almostOne)).toBe(199);
    expect(backoffDelay(3, 100, 10_000, almostOne)).toBe(399);
    expect(backoffDelay(5, 100, 10_000, () => 0.5)).toBe(800);
    expect(backoffDelay(4, 100, 10_000, () => 0)).toBe(0);
  });

  it('never exceeds maxDelayMs, however many retries', () => {
    expect(backoffDelay(40, 100, 3000, () => 0.999999)).toBe(2999);
    expect(backoffDelay(1000, 100, 3000, () => 0.999999)).toBe(2999);
  });

  it('waits at least Retry-After, the larger of it and the back-off, capped at maxDelayMs', () => {
    expect(retryDelay(1, 2000, 100, 10_000, () => 0)).toBe(2000);
    expect(retryDelay(1, 2000, 100, 10_000, () => 0.999999)).toBe(2000);
    expect(retryDelay(6, 0, 100, 10_000, () => 0.5)).toBe(1600);
    expect(retryDelay(1, 59_000, 100, 10_000, () => 0)).toBe(10_000);
    expect(retryDelay(2, undefined, 100, 10_000, () => 0.5)).toBe(100);
  });
});

describe('which responses are retried', () => {
  it('retries 408, 425, 429 and every 5xx, nothing else by status alone', () => {
    for (const s of [408, 425, 429, 500, 502, 503, 504, 599]) {
      expect(isRetryableStatus(s)).toBe(true);
    }
    for (const s of [200, 201, 304, 400, 401, 403, 404, 409, 412, 422, 428]) {
      expect(isRetryableStatus(s)).toBe(false);
    }
  });

  it('retries a 409 of a key in progress or of a lost lease, and a 409 with Retry-After', async () => {
    expect(await retryReasonOf(problem(409, IN_PROGRESS_PROBLEM_TYPE))).toBe('in-progress');
    expect(await retryReasonOf(problem(409, LEASE_LOST_PROBLEM_TYPE))).toBe('in-progress');
    expect(
      await retryReasonOf(new Response('busy', { status: 409, headers: { 'retry-after': '1' } })),
    ).toBe('in-progress');
    expect(await retryReasonOf(new Response(null, { status: 503 }))).toBe('status');
  });

  it('returns a 409 for a reused key, a plain 409 and other 4xx at once, body still readable', async () => {
    const reused = problem(409, 'urn:nestjs-exactly-once:problem:idempotency-key-reused');
    expect(await retryReasonOf(reused)).toBeUndefined();
    expect(((await reused.json()) as any).type).toMatch(/key-reused$/);
    expect(
      await retryReasonOf(
        new Response('{not json', { status: 409, headers: { 'content-type': 'application/json' } }),
      ),
    ).toBeUndefined();
    expect(await retryReasonOf(new Response('conflict', { status: 409 }))).toBeUndefined();
    for (const s of [400, 404, 412, 422]) {
      expect(await retryReasonOf(problem(s, IN_PROGRESS_PROBLEM_TYPE))).toBeUndefined();
    }
    expect(await retryReasonOf(new Response('ok', { status: 201 }))).toBeUndefined();
  });
});
