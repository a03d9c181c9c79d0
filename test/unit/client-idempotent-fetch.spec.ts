import {
  createIdempotentFetch,
  IN_PROGRESS_PROBLEM_TYPE,
  type FetchLike,
  type IdempotentFetchOptions,
  type RetryEvent,
} from '../../lib/client';

/** One attempt as the stub fetch saw it. */
interface Seen {
  method: string;
  url: string;
  headers: Headers;
  body: string;
  signal: AbortSignal;
}

type Reply = Response | Error | 'hang' | ((seen: Seen) => Response | Promise<Response>);

/** A fetch that answers from a script, one entry per attempt (the last one repeats). */
function scriptedFetch(...replies: Reply[]) {
  const seen: Seen[] = [];
  const fetch: FetchLike = async (input, init) => {
    const req = new Request(input, init);
    const s: Seen = {
      method: req.method,
      url: req.url,
      headers: req.headers,
      body: await req.text(),
      signal: init?.signal ?? req.signal,
    };
    seen.push(s);
    const reply = replies[Math.min(seen.length - 1, replies.length - 1)];
    if (reply instanceof Error) throw reply;
    if (reply === 'hang') {
      return new Promise<Response>((_, reject) =>
        s.signal.addEventListener('abort', () => reject(s.signal.reason)),
      );
    }
    if (typeof reply === 'function') return reply(s);
    return reply.clone();
  };
  return { fetch, seen };
}

const status = (code: number, headers: Record<string, string> = {}) =>
  new Response(code === 204 ? null : JSON.stringify({ status: code }), {
    status: code,
    headers: { 'content-type': 'application/json', ...headers },
  });

const inProgress = (headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: IN_PROGRESS_PROBLEM_TYPE, status: 409 }), {
    status: 409,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const URL_ = 'http://127.0.0.1:9/payments';
const json = { amount: 10, currency: 'EUR', customerId: 'c-1' };

function client(fetch: FetchLike, options: IdempotentFetchOptions = {}) {
  const events: RetryEvent[] = [];
  const f = createIdempotentFetch({
    fetch,
    random: () => 0,
    onRetry: (e) => events.push(e),
    ...options,
  });
  return { f, events };
}

const post = (f: FetchLike, init: RequestInit = {}) =>
  f(URL_, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(json),
    ...init,
  });

/** Settles a promise while fake time stands still, to prove it has not settled yet. */
async function settledNow<T>(p: Promise<T>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await jest.advanceTimersByTimeAsync(0);
  return done;
}

beforeEach(() => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  jest.setSystemTime(new Date('2026-11-24T12:00:00Z'));
});
afterEach(() => jest.useRealTimers());

describe('createIdempotentFetch: keys', () => {
  it('sends one generated UUID v4 key on every attempt of a POST, and a new key for the next call', async () => {
    const { fetch, seen } = scriptedFetch(status(503), status(502), status(201));
    const { f, events } = client(fetch);
    const p = post(f);
    await jest.advanceTimersByTimeAsync(10_000);
    expect((await p).status).toBe(201);
    expect(seen).toHaveLength(3);
    const key = seen[0].headers.get('idempotency-key')!;
    expect(key).toMatch(UUID_V4);
    expect(seen.map((s) => s.headers.get('idempotency-key'))).toEqual([key, key, key]);
    expect(seen.map((s) => s.body)).toEqual(Array(3).fill(JSON.stringify(json)));
    expect(events.map((e) => e.key)).toEqual([key, key]);

    const again = post(f);
    await jest.advanceTimersByTimeAsync(0);
    await again;
    expect(seen[3].headers.get('idempotency-key')).toMatch(UUID_V4);
    expect(seen[3].headers.get('idempotency-key')).not.toBe(key);
  });

  it("keeps the request's own key, and uses options.key (string or function) and headerName", async () => {
    const a = scriptedFetch(status(500), status(201));
    const p = post(client(a.fetch).f, {
      headers: { 'content-type': 'application/json', 'Idempotency-Key': 'order-42' },
    });
    await jest.advanceTimersByTimeAsync(1000);
    await p;
    expect(a.seen.map((s) => s.headers.get('idempotency-key'))).toEqual(['order-42', 'order-42']);

    const b = scriptedFetch(status(201));
    let n = 0;
    const viaFn = client(b.fetch, { key: () => `k-${++n}`, headerName: 'X-Request-Key' }).f;
    await Promise.all([post(viaFn), post(viaFn)]);
    expect(b.seen.map((s) => s.headers.get('x-request-key')).sort()).toEqual(['k-1', 'k-2']);
    expect(b.seen.every((s) => !s.headers.has('idempotency-key'))).toBe(true);

    const c = scriptedFetch(status(201));
    await post(client(c.fetch, { key: 'fixed' }).f);
    expect(c.seen[0].headers.get('idempotency-key')).toBe('fixed');
  });

  it('retries a GET without adding a key, and passes safe methods through when retrySafeMethods is false', async () => {
    const a = scriptedFetch(status(503), status(200));
    const p = client(a.fetch).f(URL_);
    await jest.advanceTimersByTimeAsync(1000);
    expect((await p).status).toBe(200);
    expect(a.seen).toHaveLength(2);
    expect(a.seen.every((s) => s.method === 'GET' && !s.headers.has('idempotency-key'))).toBe(true);

    const b = scriptedFetch(status(503), status(200));
    const r = await client(b.fetch, { retrySafeMethods: false }).f(URL_, { method: 'HEAD' });
    expect(r.status).toBe(503);
    expect(b.seen).toHaveLength(1);
  });
});

describe('createIdempotentFetch: what is retried', () => {
  it('retries network errors, time-outs, 408, 425, 429 and 5xx, telling onRetry why', async () => {
    const { fetch, seen } = scriptedFetch(
      new TypeError('fetch failed'),
      'hang',
      status(408),
      status(425),
      status(429),
      status(500),
      status(201),
    );
    const { f, events } = client(fetch, { maxAttempts: 10, timeoutMs: 1000 });
    const p = post(f);
    await jest.advanceTimersByTimeAsync(30_000);
    expect((await p).status).toBe(201);
    expect(seen).toHaveLength(7);
    expect(events.map((e) => [e.attempt, e.reason, e.status])).toEqual([
      [1, 'network-error', undefined],
      [2, 'timeout', undefined],
      [3, 'status', 408],
      [4, 'status', 425],
      [5, 'status', 429],
      [6, 'status', 500],
    ]);
    expect(events[0].error).toBeInstanceOf(TypeError);
    expect((events[1].error as Error).name).toBe('TimeoutError');
    expect(events[0]).toMatchObject({ method: 'POST', url: URL_ });
  });

  it('retries a 409 of a request in progress until the replay arrives', async () => {
    const replay = status(201, { 'idempotency-replayed': 'true' });
    const { fetch, seen } = scriptedFetch(inProgress(), inProgress(), replay);
    const { f, events } = client(fetch);
    const p = post(f);
    await jest.advanceTimersByTimeAsync(5000);
    const r = await p;
    expect(r.status).toBe(201);
    expect(r.headers.get('idempotency-replayed')).toBe('true');
    expect(seen).toHaveLength(3);
    expect(events.map((e) => [e.reason, e.status])).toEqual([
      ['in-progress', 409],
      ['in-progress', 409],
    ]);
  });

  it.each([400, 401, 403, 404, 412, 422, 428])(
    'returns a %i at once, without a retry',
    async (code) => {
      const { fetch, seen } = scriptedFetch(status(code), status(201));
      const { f, events } = client(fetch);
      const r = await post(f);
      expect(r.status).toBe(code);
      expect(await r.json()).toEqual({ status: code });
      expect(seen).toHaveLength(1);
      expect(events).toHaveLength(0);
    },
  );

  it('returns a 409 for a key reused with another payload at once', async () => {
    const reused = new Response(
      JSON.stringify({ type: 'urn:nestjs-exactly-once:problem:idempotency-key-reused' }),
      { status: 409, headers: { 'content-type': 'application/problem+json' } },
    );
    const { fetch, seen } = scriptedFetch(reused, status(201));
    const r = await post(client(fetch).f);
    expect(r.status).toBe(409);
    expect(((await r.json()) as any).type).toMatch(/key-reused$/);
    expect(seen).toHaveLength(1);
  });
});

describe('createIdempotentFetch: waits', () => {
  it('backs off exponentially with full jitter', async () => {
    const { fetch, seen } = scriptedFetch(status(503), status(503), status(503), status(201));
    const { f, events } = client(fetch, { random: () => 0.5, baseDelayMs: 200 });
    const p = post(f);
    await jest.advanceTimersByTimeAsync(0);
    expect(seen).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(99);
    expect(seen).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(seen).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(199);
    expect(seen).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(1);
    expect(seen).toHaveLength(3);
    await jest.advanceTimersByTimeAsync(400);
    expect(seen).toHaveLength(4);
    expect((await p).status).toBe(201);
    expect(events.map((e) => e.delayMs)).toEqual([100, 200, 400]);
  });

  it('waits Retry-After seconds', async () => {
    const { fetch, seen } = scriptedFetch(status(429, { 'retry-after': '2' }), status(201));
    const { f, events } = client(fetch);
    const p = post(f);
    await jest.advanceTimersByTimeAsync(1999);
    expect(seen).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(seen).toHaveLength(2);
    expect((await p).status).toBe(201);
    expect(events[0]).toMatchObject({ delayMs: 2000, reason: 'status', status: 429 });
  });

  it('waits until a Retry-After HTTP-date', async () => {
    const at = new Date(Date.now() + 3000).toUTCString();
    const { fetch, seen } = scriptedFetch(status(503, { 'retry-after': at }), status(201));
    const p = post(client(fetch).f);
    await jest.advanceTimersByTimeAsync(2999);
    expect(seen).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(seen).toHaveLength(2);
    expect((await p).status).toBe(201);
  });

  it('caps Retry-After at maxDelayMs (a leased 409 saying 59 s)', async () => {
    const { fetch, seen } = scriptedFetch(inProgress({ 'retry-after': '59' }), status(201));
    const { f, events } = client(fetch, { maxDelayMs: 1500 });
    const p = post(f);
    await jest.advanceTimersByTimeAsync(1499);
    expect(seen).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(seen).toHaveLength(2);
    expect((await p).status).toBe(201);
    expect(events[0]).toMatchObject({ delayMs: 1500, reason: 'in-progress' });
  });

  it('times an attempt out after timeoutMs and sends the retry with the same key', async () => {
    const { fetch, seen } = scriptedFetch('hang', status(201, { 'idempotency-replayed': 'true' }));
    const { f, events } = client(fetch, { timeoutMs: 5000 });
    const p = post(f);
    await jest.advanceTimersByTimeAsync(4999);
    expect(seen).toHaveLength(1);
    expect(seen[0].signal.aborted).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(seen[0].signal.aborted).toBe(true);
    await jest.advanceTimersByTimeAsync(1); // random() = 0: the retry follows at once
    expect(seen).toHaveLength(2);
    expect(seen[1].headers.get('idempotency-key')).toBe(seen[0].headers.get('idempotency-key'));
    expect((await p).headers.get('idempotency-replayed')).toBe('true');
    expect(events).toHaveLength(1);
    expect(events[0].reason).toBe('timeout');
  });
});

describe('createIdempotentFetch: when it stops', () => {
  it('returns the last response after maxAttempts', async () => {
    const { fetch, seen } = scriptedFetch(status(503));
    const { f, events } = client(fetch, { maxAttempts: 3 });
    const p = post(f);
    await jest.advanceTimersByTimeAsync(60_000);
    expect((await p).status).toBe(503);
    expect(seen).toHaveLength(3);
    expect(events).toHaveLength(2);
  });

  it('throws the last error after maxAttempts (a TimeoutError for a time-out)', async () => {
    const a = scriptedFetch(new TypeError('fetch failed'));
    const p = post(client(a.fetch, { maxAttempts: 4 }).f);
    const caught = p.catch((e) => e);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(await caught).toBeInstanceOf(TypeError);
    expect(a.seen).toHaveLength(4);

    const b = scriptedFetch('hang');
    const q = post(client(b.fetch, { maxAttempts: 2, timeoutMs: 100 }).f).catch((e) => e);
    await jest.advanceTimersByTimeAsync(60_000);
    const e = await q;
    expect(e.name).toBe('TimeoutError');
    expect(e.message).toMatch(/timed out after 100 ms/);
    expect(b.seen).toHaveLength(2);
  });

  it('stops when the next wait would pass deadlineMs, and shortens the last attempt to the deadline', async () => {
    const a = scriptedFetch(status(503, { 'retry-after': '2' }), status(201));
    const r = post(client(a.fetch, { deadlineMs: 1500, maxAttempts: 10 }).f);
    await jest.advanceTimersByTimeAsync(0);
    expect((await r).status).toBe(503);
    expect(a.seen).toHaveLength(1);

    const b = scriptedFetch(status(503), 'hang');
    const q = post(
      client(b.fetch, { deadlineMs: 1000, timeoutMs: 30_000, baseDelayMs: 400, random: () => 0.5 })
        .f,
    ).catch((e) => e);
    await jest.advanceTimersByTimeAsync(200);
    expect(b.seen).toHaveLength(2);
    expect(await settledNow(q)).toBe(false);
    await jest.advanceTimersByTimeAsync(800);
    expect((await q).name).toBe('TimeoutError');
    expect(b.seen).toHaveLength(2);
  });

  it("rejects with the caller's abort reason during a wait, and sends nothing more", async () => {
    const { fetch, seen } = scriptedFetch(status(503));
    const ac = new AbortController();
    const p = post(client(fetch, { baseDelayMs: 10_000, random: () => 0.5 }).f, {
      signal: ac.signal,
    }).catch((e) => e);
    await jest.advanceTimersByTimeAsync(1000);
    ac.abort(new Error('user left'));
    expect((await p).message).toBe('user left');
    await jest.advanceTimersByTimeAsync(60_000);
    expect(seen).toHaveLength(1);
  });

  it("aborts the running attempt with the caller's signal, without a retry", async () => {
    const { fetch, seen } = scriptedFetch('hang');
    const ac = new AbortController();
    const { f, events } = client(fetch);
    const p = post(f, { signal: ac.signal }).catch((e) => e);
    await jest.advanceTimersByTimeAsync(100);
    ac.abort();
    expect((await p).name).toBe('AbortError');
    expect(seen[0].signal.aborted).toBe(true);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(seen).toHaveLength(1);
    expect(events).toHaveLength(0);

    const already = post(f, { signal: AbortSignal.abort() }).catch((e) => e);
    expect((await already).name).toBe('AbortError');
    expect(seen).toHaveLength(1);
  });

  it('stops when onRetry throws, with its error', async () => {
    const { fetch, seen } = scriptedFetch(status(503));
    const f = createIdempotentFetch({
      fetch,
      onRetry: () => {
        throw new Error('enough');
      },
    });
    await expect(post(f)).rejects.toThrow('enough');
    expect(seen).toHaveLength(1);
  });
});

describe('createIdempotentFetch: bodies', () => {
  it('re-sends string, bytes, URLSearchParams and Blob bodies whole on every attempt', async () => {
    const bodies: [RequestInit['body'], string][] = [
      ['plain text', 'plain text'],
      [new TextEncoder().encode('bytes'), 'bytes'],
      [new URLSearchParams({ a: '1', b: 'x y' }), 'a=1&b=x+y'],
      [new Blob(['blob']), 'blob'],
    ];
    for (const [body, text] of bodies) {
      const { fetch, seen } = scriptedFetch(status(500), status(201));
      const p = post(client(fetch).f, { body });
      await jest.advanceTimersByTimeAsync(1000);
      await p;
      expect(seen.map((s) => s.body)).toEqual([text, text]);
    }
  });

  it('sends the same multipart bytes and boundary on every attempt of a FormData body', async () => {
    const form = new FormData();
    form.set('amount', '10');
    const { fetch, seen } = scriptedFetch(status(500), status(201));
    const p = client(fetch).f(URL_, { method: 'POST', body: form });
    await jest.advanceTimersByTimeAsync(1000);
    await p;
    expect(seen[0].headers.get('content-type')).toMatch(/^multipart\/form-data; boundary=/);
    expect(seen[1].headers.get('content-type')).toBe(seen[0].headers.get('content-type'));
    expect(seen[1].body).toBe(seen[0].body);
    expect(seen[0].body).toContain('name="amount"');
  });

  it('reads a Request input once and sends its method, headers and body on every attempt', async () => {
    const { fetch, seen } = scriptedFetch(status(502), status(201));
    const req = new Request(URL_, {
      method: 'PUT',
      headers: { 'x-tenant-id': 't1' },
      body: 'payload',
    });
    const p = client(fetch).f(req);
    await jest.advanceTimersByTimeAsync(1000);
    await p;
    expect(seen.map((s) => [s.method, s.body, s.headers.get('x-tenant-id')])).toEqual([
      ['PUT', 'payload', 't1'],
      ['PUT', 'payload', 't1'],
    ]);
    expect(seen[1].headers.get('idempotency-key')).toBe(seen[0].headers.get('idempotency-key'));
  });

  it('refuses a ReadableStream body with a TypeError before sending anything', async () => {
    const { fetch, seen } = scriptedFetch(status(201));
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('x'));
        c.close();
      },
    });
    await expect(post(client(fetch).f, { body: stream, duplex: 'half' } as any)).rejects.toThrow(
      /ReadableStream or async-iterable body cannot be sent again/,
    );
    expect(seen).toHaveLength(0);
  });
});

describe('createIdempotentFetch: requests fetch would refuse', () => {
  it('rejects a GET with a body at once instead of retrying the same TypeError', async () => {
    const { fetch, seen } = scriptedFetch(status(200));
    const { f, events } = client(fetch);
    await expect(f(URL_, { method: 'GET', body: 'x' })).rejects.toThrow(
      /GET request cannot have a body/,
    );
    expect(seen).toHaveLength(0);
    expect(events).toHaveLength(0);
  });
});

describe('createIdempotentFetch: options', () => {
  it('rejects nonsense options when created', () => {
    expect(() => createIdempotentFetch({ maxAttempts: 0 })).toThrow(/maxAttempts/);
    expect(() => createIdempotentFetch({ maxAttempts: 1.5 })).toThrow(/maxAttempts/);
    expect(() => createIdempotentFetch({ timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => createIdempotentFetch({ maxDelayMs: -1 })).toThrow(/maxDelayMs/);
    expect(() => createIdempotentFetch({ deadlineMs: Number.NaN })).toThrow(/deadlineMs/);
    expect(() => createIdempotentFetch({ headerName: 'bad header' })).toThrow(/headerName/);
    expect(() => createIdempotentFetch({ onRetry: 'x' as any })).toThrow(/onRetry/);
  });
});
