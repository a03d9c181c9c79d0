import { connect } from 'node:net';

/** A response read off the wire. */
export interface RawResponse {
  status: number;
  /** By lower-cased name. */
  headers: Record<string, string>;
  /** Every header name as it came off the wire, in order, case kept. */
  headerNames: string[];
  body: Buffer;
}

/** Bodies larger than this are sent after a pause that lets the server answer from the head. */
const EARLY_ANSWER_BODY_BYTES = 256 * 1024;
const EARLY_ANSWER_WAIT_MS = 1_000;

/**
 * Sends one HTTP/1.1 request as raw bytes over a TCP socket (loopback), so tests can send what a
 * well-behaved client library refuses to: invalid header bytes, repeated headers, invalid UTF-8.
 */
export function rawRequest(
  baseUrl: string,
  head: Buffer | string,
  body: Buffer = Buffer.alloc(0),
): Promise<RawResponse> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    socket.setTimeout(30_000, () => socket.destroy(new Error('raw request timed out')));
    // A server may answer before it has read the whole body (413 on a declared Content-Length
    // over its limit) and close the connection; the rest of the body then fails to send (EPIPE,
    // ECONNRESET). That is an answer, not a failure: the error counts only when no response came.
    let failure: Error | undefined;
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', (e) => (failure = e));
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      const sep = all.indexOf('\r\n\r\n');
      if (sep < 0) return reject(failure ?? new Error(`no HTTP response (${all.length} bytes)`));
      const lines = all.subarray(0, sep).toString('latin1').split('\r\n');
      const status = Number(lines[0].split(' ')[1]);
      const headers: Record<string, string> = {};
      const headerNames: string[] = [];
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        headerNames.push(line.slice(0, i).trim());
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      let rest: Buffer = all.subarray(sep + 4);
      if (headers['transfer-encoding'] === 'chunked') rest = dechunk(rest);
      resolve({ status, headers, headerNames, body: rest });
    });
    const headBytes = Buffer.isBuffer(head) ? head : Buffer.from(head, 'latin1');
    if (body.length <= EARLY_ANSWER_BODY_BYTES) {
      socket.write(Buffer.concat([headBytes, body]));
      return;
    }
    // A large body goes after a pause for an early answer, as curl does: a server that refuses
    // the declared length answers from the head alone (413) and closes. Had the body been on
    // the wire, that close would find it unread and reset the connection, and the reset can
    // overtake the answer (Node's HTTP server closes without draining: no lingering close).
    socket.write(headBytes);
    const timer = setTimeout(() => socket.write(body), EARLY_ANSWER_WAIT_MS);
    socket.once('data', () => clearTimeout(timer));
    socket.once('close', () => clearTimeout(timer));
  });
}

/** Builds a request head; header values are written byte for byte (latin1). */
export function requestHead(
  method: string,
  path: string,
  headers: Array<[string, string | Buffer]>,
  bodyLength: number,
): Buffer {
  const parts: Buffer[] = [
    Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n`, 'latin1'),
  ];
  for (const [k, v] of headers) {
    parts.push(
      Buffer.from(`${k}: `, 'latin1'),
      Buffer.isBuffer(v) ? v : Buffer.from(v, 'latin1'),
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`Content-Length: ${bodyLength}\r\n\r\n`, 'latin1'));
  return Buffer.concat(parts);
}

function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let i = 0;
  while (i < b.length) {
    const eol = b.indexOf('\r\n', i);
    const size = parseInt(b.subarray(i, eol).toString(), 16);
    if (!size) break;
    out.push(b.subarray(eol + 2, eol + 2 + size));
    i = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}
