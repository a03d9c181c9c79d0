import { type OutgoingHttpHeaders, ServerResponse } from 'node:http';
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
  /** Own-property path: Express's file senders as they were before the capture (restored by value). */
  private readonly platformMethods: Array<[string, unknown]> = [];
  /** Prototype path: the capturing prototype the response has while its answer is held back. */
  private readonly capturingPrototype: CapturingPrototype | undefined;
  private capturing = true;

  constructor(private readonly raw: ServerResponse) {
    this.done = new Promise((r) => (this.resolve = r));
    this.original = { writeHead: raw.writeHead, write: raw.write, end: raw.end };
    raw.on('pipe', this.onPipe);
    // Two ways to hold the answer back, the same capture behind both:
    // - Express sets each response's prototype (to its `app.response`) per request, and V8 then
    //   builds a new hidden class for every property added to that response (about 2.5 µs each,
    //   seven per capture, seen in CPU profiles). There the prototype is swapped once more, for
    //   one whose writeHead / write / end / file senders / writableEnded are the capture's (one
    //   such prototype per original prototype, made once), and swapped back at release: no
    //   property is added to the response;
    // - a response with Node's own prototype (Fastify's `reply.raw`), whose added properties
    //   share hidden classes, or one whose methods a middleware already wrapped on the object
    //   itself (on-headers, compression: an own property would hide the prototype's), is wrapped
    //   in place, as own properties, and gets its originals back by value at release.
    const base = Object.getPrototypeOf(raw) as object | null;
    if (
      base &&
      base !== ServerResponse.prototype &&
      !CAPTURED_MEMBERS.some((name) => Object.prototype.hasOwnProperty.call(raw, name))
    ) {
      this.capturingPrototype = capturingPrototypeOf(base);
      this.capturingPrototype.active.set(raw, this);
      Object.setPrototypeOf(raw, this.capturingPrototype.proto);
      return;
    }
    const self = this;
    raw.writeHead = function (status: number, a?: any, b?: any) {
      return self.onWriteHead(status, a, b);
    } as any;
    raw.write = function (chunk: any, enc?: any, cb?: any) {
      return self.onWrite(chunk, enc, cb);
    } as any;
    raw.end = function (chunk?: any, enc?: any, cb?: any) {
      return self.onEnd(chunk, enc, cb);
    } as any;
    // `end()` was called once the answer is captured, as Node's `writableEnded` means: Fastify's
    // `reply.sent` and `await reply` (a handler returning `reply.send(…)`) go by it, and would
    // otherwise wait for a release that waits for the handler. After the capture it reads Node's
    // own flag again. It stays on the object, as the methods below stay own properties holding
    // the originals: deleting properties would turn the response into a slow dictionary-mode
    // object for every write that follows (its release). One getter for every response, which
    // finds its capture on the response: a getter made per response would give each response a
    // hidden class of its own, and V8 turns such an object into a slow dictionary-mode one.
    (raw as CapturedRaw)[CAPTURE] = this;
    Object.defineProperty(raw, 'writableEnded', { configurable: true, get: writableEndedOf });
    // Express's file senders stream the file after the handler returned: refused up front.
    for (const name of FILE_SENDERS) {
      if (typeof (raw as any)[name] === 'function') {
        this.platformMethods.push([name, (raw as any)[name]]);
        (raw as any)[name] = (...args: unknown[]) => self.onFileSender(name, args);
      }
    }
  }

  /** The captured response's `writeHead`: the status and headers are held back. */
  onWriteHead(status: number, a?: any, b?: any): ServerResponse {
    const headers = typeof a === 'object' && a !== null ? a : b;
    if (this.settled) return this.raw;
    this.head = { status, headers: Array.isArray(headers) ? pairsToHeaders(headers) : headers };
    return this.raw;
  }

  /** The captured response's `write`: the bytes are held back. */
  onWrite(chunk: any, enc?: any, cb?: any): boolean {
    this.push(chunk, typeof enc === 'string' ? (enc as BufferEncoding) : undefined);
    if (!this.settled) this.writes++;
    const callback = typeof enc === 'function' ? enc : cb;
    if (typeof callback === 'function') process.nextTick(callback);
    return true;
  }

  /** The captured response's `end`: the answer is complete and frozen. */
  onEnd(chunk?: any, enc?: any, cb?: any): ServerResponse {
    const callback = typeof chunk === 'function' ? chunk : typeof enc === 'function' ? enc : cb;
    if (typeof chunk !== 'function') {
      this.push(chunk, typeof enc === 'string' ? (enc as BufferEncoding) : undefined);
    }
    // The first end() is the answer's: a later one (a second answer) changes nothing of it.
    if (!this.settled && typeof callback === 'function') this.endCallback = callback;
    this.settle();
    return this.raw;
  }

  /** Express's `sendFile` / `download` while captured: refused (see the constructor). */
  onFileSender(name: string, args: unknown[]): void {
    this.refuse(`a file sent with res.${name}()`);
    const callback = [...args].reverse().find((a) => typeof a === 'function');
    if (typeof callback === 'function') process.nextTick(callback, new Error(FILE_NOT_SENT(name)));
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
    this.raw.removeListener('pipe', this.onPipe);
    const cp = this.capturingPrototype;
    if (cp) {
      cp.active.delete(this.raw);
      // Back to the prototype it had, unless something else has changed it since.
      if (Object.getPrototypeOf(this.raw) === cp.proto) Object.setPrototypeOf(this.raw, cp.base);
      return;
    }
    this.raw.writeHead = this.original.writeHead;
    this.raw.write = this.original.write;
    this.raw.end = this.original.end;
    for (const [name, original] of this.platformMethods) (this.raw as any)[name] = original;
  }

  /** Sends what was captured, unchanged: the status, headers and body as they were at `end()`. */
  release(): void {
    this.restore();
    const body = Buffer.concat(this.chunks);
    const f = this.frozen;
    if (f) {
      const out: OutgoingHttpHeaders = {};
      for (const [lower, value] of Object.entries(f.headers)) {
        if (value !== undefined) out[f.headerNames[lower] ?? lower] = value;
      }
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
      if (gateMidResponse.hasSubscribers) {
        gateMidResponse.publish({ status, sentBytes: half, totalBytes: body.length });
      }
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

/** Express's file senders: they stream the file after the handler returned. */
const FILE_SENDERS = ['sendFile', 'download'] as const;

/** What a capture replaces: a response that has any of them as an own property is wrapped in place. */
const CAPTURED_MEMBERS = ['writeHead', 'write', 'end', 'writableEnded', ...FILE_SENDERS];

/** The prototype a captured response has while its answer is held back, for one original prototype. */
interface CapturingPrototype {
  /** The response's own prototype (Express's `app.response`, or `ServerResponse.prototype`). */
  base: object;
  /** Inherits from `base`; its captured members go to the response's capture. */
  proto: object;
  /** The capture of each response that has `proto` now. */
  active: WeakMap<object, ResponseCapture>;
}

const capturingPrototypes = new WeakMap<object, CapturingPrototype>();

/**
 * The capturing prototype for responses whose prototype is `base`, made once. Each member asks
 * for the response's capture, and without one (a reference to the member kept by a middleware
 * after the release) does what `base`'s member does.
 */
function capturingPrototypeOf(base: object): CapturingPrototype {
  const known = capturingPrototypes.get(base);
  if (known) return known;
  const active = new WeakMap<object, ResponseCapture>();
  const b = base as Record<string, any>;
  const members: PropertyDescriptorMap = {
    writeHead: method(function (this: ServerResponse, ...args: any[]) {
      const capture = active.get(this);
      return capture
        ? capture.onWriteHead(args[0], args[1], args[2])
        : b.writeHead.apply(this, args);
    }),
    write: method(function (this: ServerResponse, ...args: any[]) {
      const capture = active.get(this);
      return capture ? capture.onWrite(args[0], args[1], args[2]) : b.write.apply(this, args);
    }),
    end: method(function (this: ServerResponse, ...args: any[]) {
      const capture = active.get(this);
      return capture ? capture.onEnd(args[0], args[1], args[2]) : b.end.apply(this, args);
    }),
    writableEnded: {
      configurable: true,
      get(this: ServerResponse) {
        const capture = active.get(this);
        return capture ? capture.reportsEnded(this) : Reflect.get(base, 'writableEnded', this);
      },
    },
  };
  for (const name of FILE_SENDERS) {
    if (typeof b[name] === 'function') {
      members[name] = method(function (this: ServerResponse, ...args: unknown[]) {
        const capture = active.get(this);
        return capture ? capture.onFileSender(name, args) : b[name].apply(this, args);
      });
    }
  }
  const made: CapturingPrototype = { base, proto: Object.create(base, members), active };
  capturingPrototypes.set(base, made);
  return made;
}

/** A writable, configurable, non-enumerable method, as the platform's own methods are. */
const method = (value: (...args: any[]) => unknown): PropertyDescriptor => ({
  value,
  writable: true,
  configurable: true,
});
