import type { OutgoingHttpHeaders } from 'node:http';
import {
  ENVELOPE_V2,
  openAnswer,
  plaintextRefused,
  sealAnswer,
  StoredAnswerError,
} from '../encryption/answer-envelope';
import { ENVELOPE_MALFORMED } from '../encryption/encryption.messages';
import type { KeyRing } from '../encryption/key-ring';
import { NEVER_STORED_HEADERS } from './gate.options';

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

/** What seals and opens stored answers: the key ring and the record the answer belongs to. */
export interface AnswerSealing {
  ring: KeyRing;
  scope: string;
  key: string;
}

/** The sealing of one record's answer, or undefined without a key ring. */
export function sealingOf(
  ring: KeyRing | undefined,
  record: { scope: string; key: string },
): AnswerSealing | undefined {
  return ring ? { ring, scope: record.scope, key: record.key } : undefined;
}

/**
 * Encodes a snapshot for storage. Without a key ring: headers as JSON text, body as bytes. With
 * one: headers and body together sealed with AES-256-GCM under the ring's primary key, bound to
 * the record (scope, key, status) as associated data (envelope format 2, see
 * `encryption/answer-envelope.ts`), so a database dump shows neither; the headers column then
 * only says `{"encrypted":2,"kid":"<key id>"}`.
 */
export function encodeSnapshot(s: ResponseSnapshot, sealing?: AnswerSealing): EncodedSnapshot {
  const meta = { h: s.headers, ...(s.bodyOmitted ? { omitted: 1 } : {}) };
  if (!sealing) return { headers: JSON.stringify(meta), body: s.body };
  return sealSnapshotParts(s.status, JSON.stringify(meta), s.body, sealing);
}

/** Seals a headers column's JSON and a body (as `encodeSnapshot` does) for record `sealing`. */
export function sealSnapshotParts(
  status: number,
  metaJson: string,
  body: Buffer | null,
  sealing: AnswerSealing,
): EncodedSnapshot {
  const plain = Buffer.concat([lengthPrefixed(Buffer.from(metaJson)), body ?? Buffer.alloc(0)]);
  const { ring, scope, key } = sealing;
  return {
    headers: JSON.stringify({ encrypted: ENVELOPE_V2, kid: ring.primary.id }),
    body: sealAnswer(plain, ring, { scope, key, status }),
  };
}

/**
 * The plain headers column JSON and body of a stored answer: opened with the ring when sealed.
 * Throws a StoredAnswerError when it cannot be replayed: its key is not in the ring
 * (`key-unknown`), it is altered or belongs to another record (`unreadable`), or it is plaintext
 * while a ring is set without `acceptPlaintext` (`plaintext`).
 */
export function openSnapshotParts(
  status: number,
  headersColumn: string | null,
  body: Buffer | null,
  sealing?: AnswerSealing,
): { metaJson: string | null; body: Buffer | null; sealed: boolean } {
  const meta = headersColumn ? JSON.parse(headersColumn) : undefined;
  if (meta?.encrypted) {
    const { plain } = openAnswer(body, sealing?.ring, {
      scope: sealing?.scope ?? '',
      key: sealing?.key ?? '',
      status,
    });
    if (plain.length < 4) throw new StoredAnswerError('unreadable', ENVELOPE_MALFORMED);
    const len = plain.readUInt32BE(0);
    if (4 + len > plain.length) throw new StoredAnswerError('unreadable', ENVELOPE_MALFORMED);
    return {
      metaJson: plain.subarray(4, 4 + len).toString(),
      body: plain.subarray(4 + len),
      sealed: true,
    };
  }
  if (sealing && !sealing.ring.acceptPlaintext) throw plaintextRefused();
  return { metaJson: headersColumn, body, sealed: false };
}

export function decodeSnapshot(
  status: number,
  headersColumn: string | null,
  body: Buffer | null,
  sealing?: AnswerSealing,
): ResponseSnapshot {
  const parts = openSnapshotParts(status, headersColumn, body, sealing);
  const meta = parts.metaJson ? JSON.parse(parts.metaJson) : { h: [] };
  return { status, headers: meta.h ?? [], body: parts.body, bodyOmitted: !!meta.omitted };
}

function lengthPrefixed(b: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return Buffer.concat([len, b]);
}
