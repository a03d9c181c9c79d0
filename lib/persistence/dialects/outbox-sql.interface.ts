import type { SqlExecutor } from '../sql-executor';

/** State of an outbox message: waiting (or in flight under a lease), published, or given up. */
export type OutboxStatus = 'pending' | 'sent' | 'dead';

/** A row of the outbox as the dialects return it. */
export interface OutboxRow {
  /** The ever-increasing sequence (clustered key), as a string (BIGINT). */
  seq: string;
  /** The message id (unique). */
  id: string;
  type: string;
  /** The payload as stored (JSON text). */
  payload: string;
  /** The headers as stored (JSON text of a string map), or null. */
  headers: string | null;
  partitionKey: string | null;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
  leaseOwner: string | null;
  lockedUntil: Date | null;
  createdAt: Date;
  sentAt: Date | null;
}

/** One message to insert (already validated and serialized). */
export interface OutboxInsert {
  id: string;
  type: string;
  payload: string;
  headers: string | null;
  partitionKey: string | null;
}

export interface OutboxClaimParams {
  /** The lease owner written on the claimed rows (unique per claimed batch). */
  owner: string;
  /** Most rows to claim. */
  limit: number;
  /** How long the claimed rows belong to `owner`, in ms. */
  leaseMs: number;
  /**
   * Per-partition-key ordering: claim a row only when no older row with the same partition key
   * is still pending (due or not, leased or not). Rows without a partition key are unordered.
   */
  ordered: boolean;
}

export interface OutboxFailureParams {
  seq: string;
  owner: string;
  /** Error text (already truncated). */
  error: string;
  /** The next attempt is due this many ms from now (database clock). */
  retryInMs: number;
  /** Attempts are exhausted: the message becomes `dead` instead of pending. */
  dead: boolean;
}

export interface OutboxListParams {
  status?: OutboxStatus;
  partitionKey?: string;
  /** Only rows with a greater sequence (keyset paging). */
  afterSeq?: string;
  limit: number;
}

/** Runs `fn` in one database transaction (READ COMMITTED where the database has the choice). */
export type OutboxTransactionRunner = <T>(fn: (exec: SqlExecutor) => Promise<T>) => Promise<T>;

/**
 * Every outbox statement a dialect must provide. Times are compared on the database clock.
 * Statements that change a claimed row check its lease owner, so a relay whose lease lapsed and
 * was taken over cannot overwrite the new owner's outcome.
 */
export interface OutboxSql {
  /** Inserts messages as pending and due now, in the caller's transaction (or autocommit). */
  insert(exec: SqlExecutor, rows: readonly OutboxInsert[]): Promise<void>;
  /**
   * Atomically leases up to `limit` of the oldest pending, due, unleased rows to `owner` and
   * returns them (in sequence order). Safe with many relays on one database: rows another
   * relay is claiming at the same moment are skipped, never claimed twice.
   */
  claim(
    exec: SqlExecutor,
    inTransaction: OutboxTransactionRunner,
    p: OutboxClaimParams,
  ): Promise<OutboxRow[]>;
  /** Marks rows still leased to `owner` as sent; returns how many were marked. */
  markSent(exec: SqlExecutor, seqs: readonly string[], owner: string): Promise<number>;
  /** Counts a failed attempt of a row still leased to `owner`: back to pending (due later) or dead. */
  markFailed(exec: SqlExecutor, p: OutboxFailureParams): Promise<boolean>;
  /** Gives rows still leased to `owner` back unpublished (due at once); returns how many. */
  release(exec: SqlExecutor, seqs: readonly string[], owner: string): Promise<number>;
  /** Rows by status and/or partition key, in sequence order. */
  list(exec: SqlExecutor, p: OutboxListParams): Promise<OutboxRow[]>;
  /** Rows by message id. */
  findByIds(exec: SqlExecutor, ids: readonly string[]): Promise<OutboxRow[]>;
  /** Puts dead or sent messages back to pending (attempts reset, due now); returns how many. */
  requeue(exec: SqlExecutor, ids: readonly string[]): Promise<number>;
  /** Deletes dead messages; returns how many. */
  purgeDead(exec: SqlExecutor, ids: readonly string[]): Promise<number>;
  /** Number of rows per status. */
  countByStatus(exec: SqlExecutor): Promise<Record<OutboxStatus, number>>;
}

/** Columns every dialect selects for an OutboxRow, in this order. */
export const OUTBOX_COLUMNS =
  'seq, id, type, payload, headers, partition_key, status, attempts, next_attempt_at, last_error, lease_owner, locked_until, created_at, sent_at';

/** A time as a driver returns it: a Date, or UTC text without a zone ('YYYY-MM-DD HH:MM:SS.fff', SQLite). */
export function outboxTime(v: unknown): Date | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v;
  const s = String(v);
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : `${s.replace(' ', 'T')}Z`);
}

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
    nextAttemptAt: outboxTime(r.next_attempt_at),
    lastError: r.last_error ?? null,
    leaseOwner: r.lease_owner ?? null,
    lockedUntil: outboxTime(r.locked_until),
    createdAt: outboxTime(r.created_at) ?? new Date(NaN),
    sentAt: outboxTime(r.sent_at),
  };
}

/** Orders rows by sequence (RETURNING/OUTPUT give no order guarantee). */
export const bySeq = (a: OutboxRow, b: OutboxRow): number => {
  const x = BigInt(a.seq);
  const y = BigInt(b.seq);
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Splits a list into chunks of at most `size` (parameter limits: 2100 on SQL Server). */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Turns per-status counts from `SELECT status, COUNT(*) AS n … GROUP BY status` rows into a record. */
export function statusCounts(rows: any[]): Record<OutboxStatus, number> {
  const out: Record<OutboxStatus, number> = { pending: 0, sent: 0, dead: 0 };
  for (const r of rows) if (r.status in out) out[r.status as OutboxStatus] = Number(r.n);
  return out;
}
