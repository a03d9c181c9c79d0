import type { IdempotencyRow } from './contracts/idempotency.contract';
import type { InboxClaim, InboxRow } from './contracts/inbox.contract';
import type { OutboxRow, OutboxStatus } from './contracts/outbox.contract';

/*
 * Coercions and row mappers: every driver returns rows its own way (numbers as strings from
 * pg's BIGINT, booleans as 0/1 or 't', binaries as Uint8Array, times as Date or UTC text on
 * SQLite). The dialects turn them into the contracts' rows here, in one place.
 */

export const bool = (v: unknown): boolean =>
  v === true || v === 1 || v === '1' || v === 't' || v === 'true';
export const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
export const str = (v: unknown): string => String(v);
export const buf = (v: unknown): Buffer | null =>
  v === null || v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array);

/** A time as a driver returns it: a Date, or UTC text without a zone ('YYYY-MM-DD HH:MM:SS.fff', SQLite). */
export function dbTime(v: unknown): Date | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v;
  const s = String(v);
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : `${s.replace(' ', 'T')}Z`);
}

/** Maps a (status, attempts) row of a claim that found a committed record. */
export function settledClaim(r: any): InboxClaim {
  const attempts = num(r?.attempts);
  if (r?.status === 'processed') return { outcome: 'processed', attempts };
  if (r?.status === 'failed') return { outcome: 'failed', attempts };
  return { outcome: 'again' };
}

export function mapInboxRow(r: any): InboxRow {
  return {
    consumer: str(r.consumer),
    messageId: str(r.message_id),
    status: r.status,
    attempts: num(r.attempts),
    receivedAt: dbTime(r.received_at) ?? new Date(NaN),
    processedAt: dbTime(r.processed_at),
    lastError: r.last_error ?? null,
  };
}

/** Columns every dialect selects for an OutboxRow, in this order. */
export const OUTBOX_COLUMNS =
  'seq, id, type, payload, headers, partition_key, status, attempts, next_attempt_at, last_error, lease_owner, locked_until, created_at, sent_at, failures, failed_at, route';

export function mapOutboxRow(r: any): OutboxRow {
  return {
    seq: String(r.seq),
    id: String(r.id),
    type: String(r.type),
    payload:
      typeof r.payload === 'string'
        ? r.payload
        : Buffer.isBuffer(r.payload)
          ? r.payload.toString('utf8')
          : JSON.stringify(r.payload),
    headers: r.headers === null || r.headers === undefined ? null : String(r.headers),
    partitionKey:
      r.partition_key === null || r.partition_key === undefined ? null : String(r.partition_key),
    status: r.status,
    attempts: Number(r.attempts ?? 0),
    nextAttemptAt: dbTime(r.next_attempt_at),
    lastError: r.last_error ?? null,
    leaseOwner: r.lease_owner ?? null,
    lockedUntil: dbTime(r.locked_until),
    createdAt: dbTime(r.created_at) ?? new Date(NaN),
    sentAt: dbTime(r.sent_at),
    failures: r.failures === null || r.failures === undefined ? null : String(r.failures),
    failedAt: dbTime(r.failed_at),
    route: r.route === null || r.route === undefined ? null : String(r.route),
  };
}

/** Orders rows by sequence (RETURNING/OUTPUT give no order guarantee). */
export const bySeq = (a: OutboxRow, b: OutboxRow): number => {
  const x = BigInt(a.seq);
  const y = BigInt(b.seq);
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Turns per-status counts from `SELECT status, COUNT(*) AS n … GROUP BY status` rows into a record. */
export function statusCounts(rows: any[]): Record<OutboxStatus, number> {
  const out: Record<OutboxStatus, number> = { pending: 0, sent: 0, dead: 0 };
  for (const r of rows) if (r.status in out) out[r.status as OutboxStatus] = Number(r.n);
  return out;
}

/** A ledger row as the dialects read it (see contracts/idempotency.contract.ts). */
export function mapIdempotencyRow(r: any): IdempotencyRow {
  return {
    id: str(r.id),
    state: r.state,
    requestHash: buf(r.request_hash) ?? Buffer.alloc(0),
    responseStatus:
      r.response_status === null || r.response_status === undefined
        ? null
        : Number(r.response_status),
    responseHeaders: r.response_headers ?? null,
    responseBody: buf(r.response_body),
    leaseToken: r.lease_token ?? null,
    expired: bool(r.expired),
    leaseRemainingMs: Math.max(0, num(r.lease_remaining_ms)),
    expiresInMs:
      r.expires_in_ms === null || r.expires_in_ms === undefined
        ? undefined
        : Math.max(0, num(r.expires_in_ms)),
  };
}

/** Pending rows per route from `SELECT route, COUNT(*) AS n … GROUP BY route` (NULL is `default`). */
export function pendingPerRoute(
  rows: Array<{ route?: unknown; n?: unknown }>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) {
    const name = r.route === null || r.route === undefined ? 'default' : String(r.route);
    out[name] = (out[name] ?? 0) + Number(r.n ?? 0);
  }
  return out;
}
