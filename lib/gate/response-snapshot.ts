import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import { NEVER_STORED_HEADERS } from '../idempotency.options';

/** A stored answer: status, allow-listed headers and the body bytes. */
export interface ResponseSnapshot {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer | null;
  /** The body was over the size limit and left out (`oversizedResponse: 'store-status-only'`). */
  bodyOmitted?: boolean;
}

/** What goes into the ledger row's columns. */
export interface EncodedSnapshot {
  headers: string;
  body: Buffer | null;
}

/**
 * Keeps only allow-listed headers, never Set-Cookie or auth headers. `headers` is keyed by
 * lower-cased name; each header is stored under its name as sent (`names`, e.g. `Content-Type`),
 * so that a replay writes the same bytes. Records stored before names kept their case hold
 * lower-cased names, and replay as they are.
 */
export function storableHeaders(
  headers: OutgoingHttpHeaders,
  allow: readonly string[],
  names: Record<string, string> = {},
): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const lower of allow) {
    if (NEVER_STORED_HEADERS.has(lower)) continue;
    const v = headers[lower];
    if (v === undefined) continue;
    const name = names[lower] ?? lower;
    if (Array.isArray(v)) for (const item of v) out.push([name, String(item)]);
    else out.push([name, String(v)]);
  }
  return out;
}

const ENC_VERSION = 1;

/**
 * Encodes a snapshot for storage. Without a key: headers as JSON text, body as bytes. With a
 * 32-byte key: headers and body together sealed with AES-256-GCM (random 96-bit IV), so a
 * database dump shows neither; the headers column then only says `{"encrypted":1}`.
 */
export function encodeSnapshot(s: ResponseSnapshot, key?: Buffer): EncodedSnapshot {
  const meta = { h: s.headers, ...(s.bodyOmitted ? { omitted: 1 } : {}) };
  if (!key) return { headers: JSON.stringify(meta), body: s.body };
  const plain = Buffer.concat([
    lengthPrefixed(Buffer.from(JSON.stringify(meta))),
    s.body ?? Buffer.alloc(0),
  ]);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
  return {
    headers: JSON.stringify({ encrypted: ENC_VERSION }),
    body: Buffer.concat([Buffer.from([ENC_VERSION]), iv, cipher.getAuthTag(), sealed]),
  };
}

export function decodeSnapshot(
  status: number,
  headersColumn: string | null,
  body: Buffer | null,
  key?: Buffer,
): ResponseSnapshot {
  const meta = headersColumn ? JSON.parse(headersColumn) : { h: [] };
  if (meta.encrypted) {
    if (!key) throw new Error('A stored response is encrypted but no encryptionKey is configured.');
    if (!body || body.length < 29 || body[0] !== ENC_VERSION)
      throw new Error('Encrypted stored response is malformed.');
    const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(1, 13));
    decipher.setAuthTag(body.subarray(13, 29));
    const plain = Buffer.concat([decipher.update(body.subarray(29)), decipher.final()]);
    const len = plain.readUInt32BE(0);
    const inner = JSON.parse(plain.subarray(4, 4 + len).toString());
    return {
      status,
      headers: inner.h ?? [],
      body: plain.subarray(4 + len),
      bodyOmitted: !!inner.omitted,
    };
  }
  return { status, headers: meta.h ?? [], body, bodyOmitted: !!meta.omitted };
}

function lengthPrefixed(b: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return Buffer.concat([len, b]);
}
