import { IncomingMessage, ServerResponse } from 'node:http';

/** Express and Fastify differences, in one place. */

// An Express request/response IS Node's (its prototype chain ends in IncomingMessage's /
// ServerResponse's): `instanceof` says so without looking up Fastify's names (`raw`, `code`),
// which on an Express object walk its whole prototype chain for nothing, several times a request.
export const isFastifyReply = (res: any): boolean =>
  !!res && !(res instanceof ServerResponse) && typeof res.code === 'function' && 'raw' in res;

export const rawResponse = (res: any): ServerResponse =>
  res instanceof ServerResponse ? res : isFastifyReply(res) ? res.raw : res;

export const rawRequest = (req: any): IncomingMessage =>
  req instanceof IncomingMessage ? req : req?.raw && req.raw.headers ? req.raw : req;

/** All values of a request header (duplicates kept), from the raw header list. */
export function headerValues(req: any, name: string): string[] {
  const raw = rawRequest(req).rawHeaders ?? [];
  const lower = name.toLowerCase();
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i].toLowerCase() === lower) out.push(raw[i + 1]);
  }
  return out;
}

export function headerValue(req: any, name: string): string | undefined {
  const v = rawRequest(req).headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The route template the request matched (`/payments/:id`), not the raw path. */
export function routeTemplate(req: any, fallback: string): string {
  // Express first: looking up Fastify's names on an Express request walks its whole prototype
  // chain for nothing, on every guarded request (seen in CPU profiles of replays).
  const expressPath = req?.route?.path;
  if (typeof expressPath === 'string') return `${req.baseUrl ?? ''}${expressPath}`;
  const fastifyUrl = req?.routeOptions?.url ?? req?.routerPath;
  if (typeof fastifyUrl === 'string') return fastifyUrl;
  return fallback;
}

/** The path the client asked for, without the query string (problem+json `instance`). */
export function requestPath(req: any): string {
  const url: string = rawRequest(req)?.url ?? '';
  const i = url.indexOf('?');
  return i < 0 ? url : url.slice(0, i);
}

/** The path parameters the router extracted (already percent-decoded), on either platform. */
export const pathParams = (req: any): unknown => req?.params;

/** The raw query string (without `?`). */
export function queryString(req: any): string {
  const url: string = rawRequest(req).url ?? '';
  const i = url.indexOf('?');
  return i < 0 ? '' : url.slice(i + 1);
}

/** Writes a complete answer directly (replays and problems), on either platform. */
export function sendRaw(
  res: any,
  status: number,
  headers: Array<[string, string]>,
  body: Buffer | string,
): void {
  if (isFastifyReply(res)) {
    res.code(status);
    for (const [k, v] of headers) res.header(k, v);
    keepHeaderNames(res.raw, headers);
    res.send(body);
    return;
  }
  const r = res as ServerResponse;
  r.statusCode = status;
  for (const [k, v] of headers) r.setHeader(k, v);
  r.setHeader('Content-Length', Buffer.byteLength(body));
  endWith(r, body);
}

/** Bodies up to this size go out in the same chunk as the head (see `endWith`). */
const ONE_CHUNK_MAX_BYTES = 64 * 1024;

/**
 * Ends a Node response with `body`, byte for byte. A small Buffer goes as a latin1 string (one
 * character per byte, so the bytes are the same): Node then sends the head and the body as one
 * chunk, as it does for the string bodies of Express's `res.json`, where a Buffer body makes a
 * second chunk and a costlier `writev` (seen in CPU profiles of replays).
 */
export function endWith(r: ServerResponse, body: Buffer | string, callback?: () => void): void {
  if (Buffer.isBuffer(body) && body.length > 0 && body.length <= ONE_CHUNK_MAX_BYTES) {
    r.end(body.toString('latin1'), 'latin1', callback);
  } else r.end(body, callback);
}

/**
 * Fastify lower-cases every header name it is given (`reply.header`), so a replay of an answer
 * whose names had capitals (set on `reply.raw`, or stored by an Express app) would differ from
 * the first answer: the one `writeHead` Fastify is about to make writes each name as given.
 */
function keepHeaderNames(raw: ServerResponse, headers: Array<[string, string]>): void {
  const names = new Map<string, string>();
  for (const [k] of headers) if (k !== k.toLowerCase()) names.set(k.toLowerCase(), k);
  if (names.size === 0) return;
  const writeHead = raw.writeHead;
  raw.writeHead = function (this: ServerResponse, status: number, ...rest: any[]) {
    raw.writeHead = writeHead;
    const i = rest.findIndex((a) => typeof a === 'object' && a !== null && !Array.isArray(a));
    if (i >= 0) {
      const renamed: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(rest[i])) renamed[names.get(k) ?? k] = v;
      rest[i] = renamed;
    }
    return writeHead.call(this, status, ...rest);
  } as ServerResponse['writeHead'];
}
