import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { gateMidResponse } from '../diagnostics/diagnostics.channels';
import { endWith } from '../internal/http-platform';
import { FILE_NOT_SENT } from './idempotency.messages';

/** What the framework wrote for a request: status, headers and every body byte. */
export interface CapturedResponse {
  status: number;
  /** By lower-cased name. */
  headers: OutgoingHttpHeaders;
  /** Each header's name as it goes on the wire (`Content-Type` from Express, `content-type` from Fastify), by lower-cased name. */
  headerNames: Record<string, string>;
  body: Buffer;
  /** The body was written in several chunks (a stream), not in one `end()`. */
  streamed: boolean;
}

/**
 * Holds back what Nest and the platform write for a request (writeHead, write, end on the raw
 * Node response) so that the response snapshot can be committed in the same transaction as the
 * business writes BEFORE any byte reaches the client. `release()` then sends exactly the bytes
 * that were captured, or `replace()` sends something else (e.g. a 503 when the commit failed).
 * Capturing the final bytes records what every serializer, interceptor and exception filter
 * produced, on Express and Fastify alike.
 */
export class ResponseCapture {
  readonly done: Promise<CapturedResponse>;
  private resolve!: (c: CapturedResponse) => void;
  private readonly original: Pick<ServerResponse, 'writeHead' | 'write' | 'end'>;
  private head: { status: number; headers?: OutgoingHttpHeaders } | undefined;
  private readonly chunks: Buffer[] = [];
  private writes = 0;
  private endCallback: (() => void) | undefined;
  private settled = false;
  private frozen: CapturedResponse | undefined;
  /** Body bytes written after the answer ended (a second answer): they are never sent. */
  private late = 0;
  /** What the handler did that cannot be stored (piped a stream, sent a file), if anything. */
  private refusal: string | undefined;
  private readonly onPipe = (src: { unpipe?: (dest: unknown) => unknown }) => {
    // A stream piped into the response: its bytes arrive after the answer is decided, so it is
    // refused, and unpiped (it drains to nowhere) so that nothing of it reaches the client.
    this.refuse('a stream piped into the response');
    src.unpipe?.(this.raw);
  };
  /** Express's file senders, as they were before the capture replaced them (restored by value). */
  private readonly platformMethods: Array<[string, unknown]> = [];
  private capturing = true;

  constructor(private readonly raw: ServerResponse) {
    this.done = new Promise((r) => (this.resolve = r));
    this.original = { writeHead: raw.writeHead, write: raw.write, end: raw.end };
    const self = this;
    raw.writeHead = function (status: number, a?: any, b?: any) {
      const headers = typeof a === 'object' && a !== null ? a : b;
      if (self.settled) return raw;
      self.head = { status, headers: Array.isArray(headers) ? pairsToHeaders(headers) : headers };
      return raw;
    } as any;
    raw.write = function (chunk: any, enc?: any, cb?: any) {
      self.push(chunk, typeof enc === 'string' ? (enc as BufferEncoding) : undefined);
      if (!self.settled) self.writes++;
      const callback = typeof enc === 'function' ? enc : cb;
      if (typeof callback === 'function') process.nextTick(callback);
      return true;
    } as any;
    raw.end = function (chunk?: any, enc?: any, cb?: any) {
      const callback = typeof chunk === 'function' ? chunk : typeof enc === 'function' ? enc : cb;
      if (typeof chunk !== 'function')
        self.push(chunk, typeof enc === 'string' ? (enc as BufferEncoding) : undefined);
      // The first end() is the answer's: a later one (a second answer) changes nothing of it.
      if (!self.settled && typeof callback === 'function') self.endCallback = callback;
      self.settle();
      return raw;
    } as any;
    // `end()` was called once the answer is captured, as Node's `writableEnded` means: Fastify's
    // `reply.sent` and `await reply` (a handler returning `reply.send(…)`) go by it, and would
    // otherwise wait for a release that waits for the handler.
    // After the capture it reads Node's own flag again. It stays on the object, as the methods
    // below stay own properties holding the originals: deleting properties would turn the
    // response into a slow dictionary-mode object for every write that follows (its release).
    // One getter for every response, which finds its capture on the response: a getter made
    // per response would give each response a hidden class of its own, and V8 turns such an
    // object into a slow dictionary-mode one (every property access of Node, Express and Nest
    // on it for the rest of the request pays for that).
    (raw as CapturedRaw)[CAPTURE] = this;
    Object.defineProperty(raw, 'writableEnded', { configurable: true, get: writableEndedOf });
    raw.on('pipe', this.onPipe);
    // Express's file senders stream the file after the handler returned: refused up front.
    for (const name of ['sendFile', 'download'])
      if (typeof (raw as any)[name] === 'function') {
        this.platformMethods.push([name, (raw as any)[name]]);
        (raw as any)[name] = (...args: unknown[]) => {
          self.refuse(`a file sent with res.${name}()`);
          const callback = args.reverse().find((a) => typeof a === 'function');
          if (typeof callback === 'function')
            process.nextTick(callback, new Error(FILE_NOT_SENT(name)));
        };
      }
  }

  /** What `writableEnded` reads on the captured response: see the constructor. */
  reportsEnded(raw: ServerResponse): boolean {
    return this.capturing ? this.settled : raw.finished;
  }

  /** The answer is complete (its `end()` was called). */
  get ended(): boolean {
    return this.settled;
  }

  /**
   * Why the captured answer cannot be stored exactly, if it cannot: a stream piped into the
   * response, a file sent, or body bytes written after the answer ended (a second answer).
   */
  get unstorable(): string | undefined {
    if (this.refusal) return this.refusal;
    if (this.late > 0) return 'a second body written after the answer had ended';
    return undefined;
  }

  /** Marks the answer as one that cannot be stored (the first reason is kept). */
  refuse(why: string): void {
    this.refusal ??= why;
  }

  private push(chunk: any, enc?: BufferEncoding) {
    if (chunk === undefined || chunk === null) return;
    const bytes = Buffer.isBuffer(chunk)
      ? chunk
      : typeof chunk === 'string'
        ? Buffer.from(chunk, enc ?? 'utf8')
        : Buffer.from(chunk);
    // After the answer ended nothing joins it: the bytes are counted (a refusal), never sent.
    if (this.settled) this.late += bytes.length;
    else this.chunks.push(bytes);
  }

  private settle() {
    if (this.settled) return;
    this.settled = true;
    // Frozen now: what the framework sets on the response later (Nest's reply of a returned
    // value after the handler answered itself) changes neither what is stored nor what is sent.
    const headers: OutgoingHttpHeaders = {};
    const headerNames: Record<string, string> = {};
    const raw = this.raw as ServerResponse & { getRawHeaderNames?: () => string[] };
    for (const name of raw.getRawHeaderNames?.() ?? raw.getHeaderNames()) {
      const lower = name.toLowerCase();
      headers[lower] = raw.getHeader(name);
      headerNames[lower] = name;
    }
    for (const [name, value] of Object.entries(this.head?.headers ?? {})) {
      const lower = name.toLowerCase();
      headers[lower] = value;
      headerNames[lower] = name;
    }
    this.frozen = {
      status: this.head?.status ?? this.raw.statusCode,
      headers,
      headerNames,
      body: Buffer.concat(this.chunks),
      streamed: this.writes > 0,
    };
    this.resolve(this.frozen);
  }

  private restore() {
    this.capturing = false;
    this.raw.writeHead = this.original.writeHead;
    this.raw.write = this.original.write;
    this.raw.end = this.original.end;
    this.raw.removeListener('pipe', this.onPipe);
    for (const [name, original] of this.platformMethods) (this.raw as any)[name] = original;
  }

  /** Sends what was captured, unchanged: the status, headers and body as they were at `end()`. */
  release(): void {
    this.restore();
    const body = Buffer.concat(this.chunks);
    const f = this.frozen;
    if (f) {
      const out: OutgoingHttpHeaders = {};
      for (const [lower, value] of Object.entries(f.headers))
        if (value !== undefined) out[f.headerNames[lower] ?? lower] = value;
      this.raw.writeHead(f.status, out);
    } else if (this.head) this.raw.writeHead(this.head.status, this.head.headers);
    if (gateMidResponse.hasSubscribers && body.length > 1) return this.releaseInTwoParts(body);
    endWith(this.raw, body, this.endCallback);
  }

  /**
   * Only while the `gate.mid-response` diagnostics channel has subscribers: the head and the
   * first half of the body go out and reach the socket, the channel's message is published, then
   * the rest goes (a crash test that kills the process there leaves the client with a truncated
   * answer).
   */
  private releaseInTwoParts(body: Buffer): void {
    const half = Math.floor(body.length / 2);
    const status = this.head?.status ?? this.raw.statusCode;
    this.raw.write(body.subarray(0, half), () => {
      if (gateMidResponse.hasSubscribers)
        gateMidResponse.publish({ status, sentBytes: half, totalBytes: body.length });
      this.raw.end(body.subarray(half), this.endCallback);
    });
  }

  /** Adds a header to the captured answer before it is released. */
  setHeader(name: string, value: string): void {
    if (this.frozen) {
      this.frozen.headers[name.toLowerCase()] = value;
      this.frozen.headerNames[name.toLowerCase()] = name;
    } else if (this.head?.headers) this.head.headers[name] = value;
    else if (!this.raw.headersSent) this.raw.setHeader(name, value);
  }

  /** Sends another answer instead of the captured one (nothing captured reaches the client). */
  replace(status: number, headers: Array<[string, string]>, body: Buffer | string): void {
    this.restore();
    if (this.raw.headersSent) {
      this.raw.end();
      return;
    }
    for (const name of this.raw.getHeaderNames()) this.raw.removeHeader(name);
    this.raw.statusCode = status;
    for (const [k, v] of headers) this.raw.setHeader(k, v);
    this.raw.setHeader('Content-Length', Buffer.byteLength(body));
    this.raw.end(body, this.endCallback);
  }

  /** Stops capturing without sending (the framework never wrote). */
  abandon(): void {
    this.restore();
  }
}

const CAPTURE = Symbol('nestjs-exactly-once:response-capture');
type CapturedRaw = ServerResponse & { [CAPTURE]?: ResponseCapture };

/** `writableEnded` of a captured response (the same function for every response). */
function writableEndedOf(this: CapturedRaw): boolean {
  const capture = this[CAPTURE];
  return capture ? capture.reportsEnded(this) : this.finished;
}

function pairsToHeaders(pairs: any[]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) out[String(pairs[i])] = pairs[i + 1];
  return out;
}
