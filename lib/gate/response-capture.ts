import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { gateMidResponse } from '../diagnostics/diagnostics.channels';

/** What the framework wrote for a request: status, headers and every body byte. */
export interface CapturedResponse {
  status: number;
  headers: OutgoingHttpHeaders;
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

  constructor(private readonly raw: ServerResponse) {
    this.done = new Promise((r) => (this.resolve = r));
    this.original = { writeHead: raw.writeHead, write: raw.write, end: raw.end };
    const self = this;
    raw.writeHead = function (status: number, a?: any, b?: any) {
      const headers = typeof a === 'object' && a !== null ? a : b;
      self.head = { status, headers: Array.isArray(headers) ? pairsToHeaders(headers) : headers };
      return raw;
    } as any;
    raw.write = function (chunk: any, enc?: any, cb?: any) {
      self.push(chunk, typeof enc === 'string' ? (enc as BufferEncoding) : undefined);
      self.writes++;
      const callback = typeof enc === 'function' ? enc : cb;
      if (typeof callback === 'function') process.nextTick(callback);
      return true;
    } as any;
    raw.end = function (chunk?: any, enc?: any, cb?: any) {
      if (typeof chunk === 'function') self.endCallback = chunk;
      else {
        if (chunk !== undefined && chunk !== null)
          self.push(chunk, typeof enc === 'string' ? (enc as BufferEncoding) : undefined);
        const callback = typeof enc === 'function' ? enc : cb;
        if (typeof callback === 'function') self.endCallback = callback;
      }
      self.settle();
      return raw;
    } as any;
  }

  private push(chunk: any, enc?: BufferEncoding) {
    if (chunk === undefined || chunk === null) return;
    this.chunks.push(
      Buffer.isBuffer(chunk)
        ? chunk
        : typeof chunk === 'string'
          ? Buffer.from(chunk, enc ?? 'utf8')
          : Buffer.from(chunk),
    );
  }

  private settle() {
    if (this.settled) return;
    this.settled = true;
    const headers: OutgoingHttpHeaders = {
      ...this.raw.getHeaders(),
      ...lowerKeys(this.head?.headers ?? {}),
    };
    this.resolve({
      status: this.head?.status ?? this.raw.statusCode,
      headers,
      body: Buffer.concat(this.chunks),
      streamed: this.writes > 0,
    });
  }

  private restore() {
    this.raw.writeHead = this.original.writeHead;
    this.raw.write = this.original.write;
    this.raw.end = this.original.end;
  }

  /** Sends what was captured, unchanged. */
  release(): void {
    this.restore();
    const body = Buffer.concat(this.chunks);
    if (this.head) this.raw.writeHead(this.head.status, this.head.headers);
    if (gateMidResponse.hasSubscribers && body.length > 1) return this.releaseInTwoParts(body);
    this.raw.end(body, this.endCallback);
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
    if (this.head?.headers) this.head.headers[name.toLowerCase()] = value;
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

function lowerKeys(h: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
}

function pairsToHeaders(pairs: any[]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) out[String(pairs[i]).toLowerCase()] = pairs[i + 1];
  return out;
}
