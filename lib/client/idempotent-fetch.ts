import {
  ATTEMPT_TIMED_OUT,
  BODY_ON_GET,
  NO_FETCH,
  NO_RANDOM_UUID,
  STREAM_BODY,
} from './client.messages';
import {
  type FetchLike,
  type IdempotentFetchOptions,
  type ResolvedClientOptions,
  resolveClientOptions,
} from './idempotent-fetch.options';
import { parseRetryAfter } from './retry-after';
import { retryDelay, retryReasonOf, type RetryReason, SAFE_METHODS } from './retry-policy';

/**
 * A `fetch` that makes retries safe and automatic. For an unsafe method (POST, PUT, PATCH,
 * DELETE, anything not GET/HEAD/OPTIONS/TRACE) one `Idempotency-Key` is chosen per call (the
 * request's own header if it has one, else `options.key`, else a random UUID v4) and sent on every
 * attempt. An attempt is retried after a network error, a time-out (`timeoutMs`), a 408, 425,
 * 429 or 5xx, and a 409 of a key whose first attempt is still running; waits are exponential with
 * full jitter, at least `Retry-After` when the server sends one, at most `maxDelayMs`. The call
 * ends at `maxAttempts` or `deadlineMs` with the last response (or the last error). Any other
 * answer, 4xx included, is returned at once. The caller's `signal` cancels attempts and waits.
 *
 * No Node-only API: works in Node 20+ and browsers (fetch, AbortController, crypto.randomUUID).
 */
export function createIdempotentFetch(options: IdempotentFetchOptions = {}): FetchLike {
  const o = resolveClientOptions(options);
  return (input, init) => idempotentFetch(o, input, init);
}

interface PreparedCall {
  method: string;
  url: string;
  key?: string;
  /** Builds the arguments of one attempt: fresh headers and body source, the attempt's signal. */
  args(signal: AbortSignal): [string | URL | Request, RequestInit | undefined];
}

async function idempotentFetch(
  o: ResolvedClientOptions,
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<Response> {
  const fetchImpl = o.fetch ?? (globalThis.fetch as FetchLike | undefined);
  if (typeof fetchImpl !== 'function') throw new TypeError(NO_FETCH());
  const isRequest = typeof Request !== 'undefined' && input instanceof Request;
  const method = (init?.method ?? (isRequest ? (input as Request).method : 'GET')).toUpperCase();
  const safe = SAFE_METHODS.has(method);
  if (safe && !o.retrySafeMethods) return fetchImpl(input, init);

  const callerSignal = init?.signal ?? (isRequest ? (input as Request).signal : undefined);
  if (callerSignal?.aborted) throw callerSignal.reason;
  const call = await prepare(o, input, init, method, safe, isRequest);
  const started = Date.now();
  const deadline = o.deadlineMs === undefined ? Infinity : started + o.deadlineMs;

  for (let attempt = 1; ; attempt++) {
    const timeoutMs = Math.max(1, Math.min(o.timeoutMs, deadline - Date.now()));
    let response: Response | undefined;
    let error: unknown;
    let reason: RetryReason | undefined;
    const outcome = await runAttempt(fetchImpl, call, timeoutMs, callerSignal);
    if ('response' in outcome) {
      response = outcome.response;
      reason = outcome.reason;
      if (reason === undefined) return response;
    } else {
      if (callerSignal?.aborted) throw callerSignal.reason;
      error = outcome.error;
      reason = outcome.timedOut ? 'timeout' : 'network-error';
    }

    const retryAfterMs = response
      ? parseRetryAfter(response.headers.get('retry-after'))
      : undefined;
    const delayMs = retryDelay(attempt, retryAfterMs, o.baseDelayMs, o.maxDelayMs, o.random);
    const last = attempt >= o.maxAttempts || Date.now() + delayMs >= deadline;
    if (last) {
      if (response) return response;
      throw error;
    }
    discard(response);
    o.onRetry?.({
      attempt,
      delayMs,
      reason,
      ...(response ? { status: response.status } : { error }),
      key: call.key,
      method: call.method,
      url: call.url,
    });
    await sleep(delayMs, callerSignal);
  }
}

type AttemptOutcome =
  { response: Response; reason: RetryReason | undefined } | { error: unknown; timedOut: boolean };

/** One attempt under its own time-out (which covers the response headers and, for a 409, the peek at its problem type). */
async function runAttempt(
  fetchImpl: FetchLike,
  call: PreparedCall,
  timeoutMs: number,
  callerSignal: AbortSignal | null | undefined,
): Promise<AttemptOutcome> {
  const controller = new AbortController();
  const { signal, unlink } = linkSignals(controller.signal, callerSignal);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(timeoutError(timeoutMs));
  }, timeoutMs);
  try {
    const response = await fetchImpl(...call.args(signal));
    const reason = await retryReasonOf(response);
    // A response handed to the caller stays cancellable by the caller's signal while its body is read.
    if (reason !== undefined) unlink();
    return { response, reason };
  } catch (error) {
    unlink();
    return { error: timedOut ? timeoutError(timeoutMs) : error, timedOut };
  } finally {
    clearTimeout(timer);
  }
}

/** Reads what must be re-sendable once, and picks the key. */
async function prepare(
  o: ResolvedClientOptions,
  input: string | URL | Request,
  init: RequestInit | undefined,
  method: string,
  safe: boolean,
  isRequest: boolean,
): Promise<PreparedCall> {
  const request = isRequest ? (input as Request) : undefined;
  // As fetch does: init.headers, when given, replace the Request's headers.
  const headers = new Headers(init?.headers ?? request?.headers);
  let body: RequestInit['body'] = init?.body;
  if (body === undefined && request?.body) {
    body = await request.arrayBuffer(); // a Request's body is a stream: read it once
  } else if (isStream(body)) {
    throw new TypeError(STREAM_BODY(method));
  } else if (typeof FormData !== 'undefined' && body instanceof FormData) {
    // Encoded once, so that every attempt sends the same multipart boundary (the same fingerprint).
    const encoded = new Response(body);
    if (!headers.has('content-type')) {
      headers.set('content-type', encoded.headers.get('content-type') ?? '');
    }
    body = await encoded.arrayBuffer();
  }
  // fetch would reject every attempt with this TypeError: say it once, before sending anything.
  if ((method === 'GET' || method === 'HEAD') && body !== undefined && body !== null) {
    throw new TypeError(BODY_ON_GET(method));
  }
  let key: string | undefined = headers.get(o.headerName) ?? undefined;
  if (key === undefined && !safe) {
    key = typeof o.key === 'string' ? o.key : o.key ? o.key() : uuidV4();
    headers.set(o.headerName, key);
  }
  const url = request ? request.url : String(input);
  return {
    method,
    url,
    key,
    args: (signal) => {
      const attemptInit: RequestInit = { ...init, method, headers: new Headers(headers), signal };
      if (body !== undefined) attemptInit.body = body;
      return request ? [new Request(request, attemptInit), undefined] : [input, attemptInit];
    },
  };
}

function isStream(body: unknown): boolean {
  if (body === null || typeof body !== 'object') return false;
  if (typeof ReadableStream !== 'undefined' && body instanceof ReadableStream) return true;
  return typeof (body as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}

/** The attempt's signal: aborted by its time-out or by the caller. */
function linkSignals(
  own: AbortSignal,
  caller: AbortSignal | null | undefined,
): { signal: AbortSignal; unlink: () => void } {
  if (!caller) return { signal: own, unlink: () => {} };
  const any = (AbortSignal as unknown as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (typeof any === 'function') return { signal: any([own, caller]), unlink: () => {} };
  const linked = new AbortController();
  const onOwn = () => linked.abort(own.reason);
  const onCaller = () => linked.abort(caller.reason);
  own.addEventListener('abort', onOwn, { once: true });
  caller.addEventListener('abort', onCaller, { once: true });
  return {
    signal: linked.signal,
    unlink: () => caller.removeEventListener('abort', onCaller),
  };
}

function sleep(ms: number, signal: AbortSignal | null | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Frees the connection of a response that is not handed to the caller. */
function discard(response: Response | undefined): void {
  response?.body?.cancel().catch(() => {});
}

function timeoutError(ms: number): Error {
  return typeof DOMException === 'function'
    ? new DOMException(ATTEMPT_TIMED_OUT(ms), 'TimeoutError')
    : Object.assign(new Error(ATTEMPT_TIMED_OUT(ms)), { name: 'TimeoutError' });
}

/** A random UUID v4: crypto.randomUUID where it exists (Node, secure browser contexts), else getRandomValues. */
export function uuidV4(): string {
  const c = (
    globalThis as {
      crypto?: { randomUUID?: () => string; getRandomValues?: (a: Uint8Array) => Uint8Array };
    }
  ).crypto;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  if (!c || typeof c.getRandomValues !== 'function') throw new Error(NO_RANDOM_UUID());
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x: number) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
