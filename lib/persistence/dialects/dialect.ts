import type { SqlExecutor } from '../sql-executor';
import type { OutboxSql } from './outbox-sql.interface';

/** The database families the library speaks. */
export type DialectName = 'mssql' | 'postgres' | 'mysql' | 'sqlite';

/** A row of the idempotency ledger as the dialects return it (times already compared on the database clock). */
export interface IdempotencyRow {
  id: string;
  state: 'started' | 'completed';
  requestHash: Buffer;
  responseStatus: number | null;
  responseHeaders: string | null;
  responseBody: Buffer | null;
  leaseToken: string | null;
  /** The record is past its expiry (counts as absent). */
  expired: boolean;
  /** Milliseconds left on the lease of a started record (0 when none or lapsed). */
  leaseRemainingMs: number;
}

export interface ReserveParams {
  scope: string;
  key: string;
  requestHash: Buffer;
  leaseToken: string;
  leaseMs: number;
  ttlMs: number;
  lockTimeoutMs: number;
}

/**
 * `inserted`: the key is ours. `exists`: a committed record holds it (`row` when the dialect read
 * it in the same round trip; otherwise the caller reads it). `locked`: an uncommitted reservation
 * holds it (another request with this key is in flight).
 */
export type ReserveOutcome =
  | { outcome: 'inserted'; id: string }
  | { outcome: 'exists'; row?: IdempotencyRow }
  | { outcome: 'locked' };

export interface CompleteParams {
  id: string;
  leaseToken: string;
  status: number;
  headers: string;
  body: Buffer | null;
  ttlMs: number;
  /**
   * The reservation was made in this same transaction (transactional mode), so its expiry, set
   * `ttlMs` after the reservation statement, may stand: it differs from "`ttlMs` after completion"
   * by the handler's duration. PostgreSQL keeps it, which leaves every indexed column unchanged
   * and lets the completion be a HOT update (no index entries written); the other dialects
   * always set the expiry from the completion.
   */
  sameTransaction?: boolean;
}

/** Every idempotency-ledger statement a dialect must provide. */
export interface IdempotencySql {
  /**
   * Present where the transactional mode writes its record once (PostgreSQL, SQLite); absent
   * where it reserves first and completes at the end (SQL Server, MySQL/MariaDB).
   */
  singleWrite?: SingleWriteIdempotencySql;
  /** Atomic reservation: insert guarded by the unique (scope, key) index, with a short lock wait. */
  reserve(exec: SqlExecutor, p: ReserveParams): Promise<ReserveOutcome>;
  find(exec: SqlExecutor, scope: string, key: string): Promise<IdempotencyRow | undefined>;
  /** Takes over an expired record, or a started one whose lease (held by `expectedToken`) has lapsed. */
  takeOver(
    exec: SqlExecutor,
    id: string,
    expectedToken: string | null,
    p: ReserveParams,
  ): Promise<boolean>;
  /** Compare-and-set completion: only the holder of `leaseToken` on a started record succeeds. */
  complete(exec: SqlExecutor, p: CompleteParams): Promise<boolean>;
  /**
   * Leased mode: extends our started reservation's lease to `leaseMs` from now (database clock)
   * while its handler runs. False when the record is no longer ours and started (completed,
   * released, or taken over).
   */
  renew(exec: SqlExecutor, id: string, leaseToken: string, leaseMs: number): Promise<boolean>;
  /** Deletes our started reservation (handler failed): the key is free for the retry. */
  release(exec: SqlExecutor, id: string, leaseToken: string): Promise<void>;
  /** Removes one record by scope and key (admin eviction). */
  evict(exec: SqlExecutor, scope: string, key: string): Promise<number>;
}

/** What `claim` found: whether another transaction holds the key's lock, and the key's record. */
export interface ClaimOutcome {
  /** Another transaction holds the key (an uncommitted request with this key is in flight). */
  locked: boolean;
  /** The key's committed record, when there is one (read in the same statement as the lock). */
  row?: IdempotencyRow;
}

/** A completed record written in one statement at the end of the transaction. */
export interface InsertCompletedParams {
  scope: string;
  key: string;
  requestHash: Buffer;
  status: number;
  headers: string;
  body: Buffer | null;
  ttlMs: number;
  /**
   * Replace this expired record, or this started one whose lease (held by `expectedToken`) has
   * lapsed, instead of inserting (compare-and-set, like `takeOver`).
   */
  replace?: { id: string; expectedToken: string | null };
}

/**
 * Transactional mode in ONE write per first execution, on databases with a lock on a key that
 * lasts until the transaction ends: `claim` takes that lock without waiting and reads the key's
 * record in the same statement (no row is written), and `insertCompleted` writes the completed
 * record once, at the end, in the same transaction as the handler's writes. A committed record
 * that raced the lock (committed after the claim's snapshot, before its lock) makes
 * `insertCompleted` return false: the caller rolls back and answers that record.
 */
export interface SingleWriteIdempotencySql {
  claim(
    exec: SqlExecutor,
    p: { scope: string; key: string; lockTimeoutMs: number },
  ): Promise<ClaimOutcome>;
  insertCompleted(exec: SqlExecutor, p: InsertCompletedParams): Promise<boolean>;
}

/** State of an inbox record: handled and committed, failed but retryable, or given up after `maxAttempts`. */
export type InboxStatus = 'processed' | 'retrying' | 'failed';

/** A row of the inbox as the dialects return it. */
export interface InboxRow {
  consumer: string;
  messageId: string;
  status: InboxStatus;
  /** Handler runs so far (failed ones, plus the one that committed). */
  attempts: number;
  receivedAt: Date;
  processedAt: Date | null;
  lastError: string | null;
}

/**
 * `claimed`: the record is ours in the current transaction (fresh, or a retrying one taken
 * over; `attempts` counts this run); `processed` / `failed`: a committed record already settles
 * the message (the handler must not run); `again`: the record changed under the claim (deleted
 * meanwhile), claim once more.
 */
export type InboxClaim =
  | { outcome: 'claimed'; attempts: number }
  | { outcome: 'processed'; attempts: number }
  | { outcome: 'failed'; attempts: number }
  | { outcome: 'again' };

/** Status and attempts of a record after a failed attempt was counted. */
export interface InboxFailureCount {
  status: InboxStatus;
  attempts: number;
}

/** Every inbox statement a dialect must provide. */
export interface InboxSql {
  /**
   * In the caller's transaction: records (consumer, message id) as processed. The insert is
   * guarded by the unique key and WAITS on another transaction's uncommitted record of the same
   * id (normal lock wait), so a concurrent duplicate sees the outcome of the first delivery.
   */
  claim(exec: SqlExecutor, consumer: string, messageId: string): Promise<InboxClaim>;
  /**
   * After the handler's transaction rolled back, in its own short transaction: counts one failed
   * attempt (status `failed` once `maxAttempts` is reached, else `retrying`). A record another
   * delivery has settled meanwhile is left alone and returned as it is.
   */
  recordFailure(
    exec: SqlExecutor,
    consumer: string,
    messageId: string,
    error: string,
    maxAttempts: number,
  ): Promise<InboxFailureCount>;
  find(exec: SqlExecutor, consumer: string, messageId: string): Promise<InboxRow | undefined>;
  /** Deletes one record (an operator lets a failed message run again). */
  remove(exec: SqlExecutor, consumer: string, messageId: string): Promise<number>;
  /** Errors after which the claim's transaction is gone and the whole attempt may be retried (deadlock victim, lock wait timeout). */
  isRetryable(error: unknown): boolean;
}

/** Maps a (status, attempts) row of a claim that found a committed record. */
export function settledClaim(r: any): InboxClaim {
  const attempts = num(r?.attempts);
  if (r?.status === 'processed') return { outcome: 'processed', attempts };
  if (r?.status === 'failed') return { outcome: 'failed', attempts };
  return { outcome: 'again' };
}

export function mapInboxRow(r: any): InboxRow {
  const time = (v: unknown): Date | null =>
    v === null || v === undefined ? null : v instanceof Date ? v : parseDbTime(String(v));
  return {
    consumer: str(r.consumer),
    messageId: str(r.message_id),
    status: r.status,
    attempts: num(r.attempts),
    receivedAt: time(r.received_at) ?? new Date(NaN),
    processedAt: time(r.processed_at),
    lastError: r.last_error ?? null,
  };
}

/** A UTC timestamp as a database returns it in text ('YYYY-MM-DD HH:MM:SS.fff', no zone). */
function parseDbTime(v: string): Date {
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(v) ? v : `${v.replace(' ', 'T')}Z`);
}

/** What one bounded cleanup statement did. */
export interface CleanupBatch {
  deleted: number;
  /**
   * Where the dialect deletes in time order: the time of the newest row this statement deleted.
   * The next statement of the sweep starts there instead of re-reading the index entries of the
   * rows just deleted (on PostgreSQL they stay in the index until VACUUM). Opaque: passed back as is.
   */
  last?: unknown;
}

/**
 * Retention cleanup statements. Each deletes at most `limit` rows in one short autocommit
 * statement (or a transaction at `isolation`), skipping rows other transactions hold where the
 * database can (READPAST, SKIP LOCKED). `from` is the `last` of the previous statement of the
 * same sweep, when the dialect returned one.
 */
export interface CleanupSql {
  /** Isolation level for the transaction around each statement; undefined: autocommit. */
  readonly isolation?: 'READ COMMITTED';
  /** Statements run first in the transaction around each statement (e.g. `SET LOCAL …`); a transaction is opened when given. */
  readonly prelude?: readonly string[];
  /** Idempotency records past their expiry, never a started record whose lease is still live. */
  expiredIdempotency(exec: SqlExecutor, limit: number, from?: unknown): Promise<CleanupBatch>;
  /** Outbox messages sent more than `retentionMs` ago (pending and dead ones stay). */
  sentOutbox(
    exec: SqlExecutor,
    limit: number,
    retentionMs: number,
    from?: unknown,
  ): Promise<CleanupBatch>;
  /** Inbox records received more than `retentionMs` ago. */
  oldInbox(
    exec: SqlExecutor,
    limit: number,
    retentionMs: number,
    from?: unknown,
  ): Promise<CleanupBatch>;
  /** Errors after which the same statement may simply run again (deadlock victim, lock timeout, busy). */
  isRetryable(error: unknown): boolean;
}

/**
 * How a versioned table keeps its version: `counter` is an integer the library increments in
 * the same statement; `rowversion` is a SQL Server ROWVERSION the server sets on every write.
 */
export type VersionKind = 'counter' | 'rowversion';

/** A version as stored: a counter (number) or the 8 bytes of a rowversion. */
export type VersionValue = number | Buffer;

/** A table with a version column, by its database names (unquoted: the dialect quotes them). */
export interface VersionedTableSql {
  schema?: string;
  table: string;
  keyColumns: string[];
  versionColumn: string;
  versionKind: VersionKind;
}

/** One column (database name, unquoted) and its value, prepared by the TypeORM driver. */
export type ColumnValue = [column: string, value: unknown];

/** Every statement of conditional (If-Match) writes. Each check-and-write is ONE statement. */
export interface ConditionalSql {
  /**
   * Updates the row with `key` when its version is one of `expected` (or when it exists, for
   * `'any'`) and bumps the version; returns the new version, or undefined when no row matched.
   */
  update(
    exec: SqlExecutor,
    t: VersionedTableSql,
    key: unknown[],
    set: ColumnValue[],
    expected: VersionValue[] | 'any',
  ): Promise<VersionValue | undefined>;
  /** Inserts the row (keys included in `values`); returns its version, or undefined when a row with that primary key exists. */
  insert(
    exec: SqlExecutor,
    t: VersionedTableSql,
    key: unknown[],
    values: ColumnValue[],
  ): Promise<VersionValue | undefined>;
  /** Deletes the row when its version is one of `expected` (or when it exists, for `'any'`); true when a row was deleted. */
  delete(
    exec: SqlExecutor,
    t: VersionedTableSql,
    key: unknown[],
    expected: VersionValue[] | 'any',
  ): Promise<boolean>;
}

/** The outbox figures the health indicator and the backlog gauges report. */
export interface OutboxHealthRow {
  /** Messages in status pending (due or not, leased or not). */
  pending: number;
  /** Age of the oldest pending message on the database clock, in ms (0 when none). */
  oldestPendingAgeMs: number;
  /** Messages in status dead. */
  dead: number;
}

/** Monitoring statements: cheap reads over the partial/filtered indexes, never blocking writers. */
export interface HealthSql {
  outboxHealth(exec: SqlExecutor): Promise<OutboxHealthRow>;
}

/** Names of the tables, already quoted for the dialect. */
export interface QuotedTables {
  idempotency: string;
  outbox: string;
  inbox: string;
}

export interface Dialect {
  readonly name: DialectName;
  /** One writer at a time (SQLite): the library serializes transactions in process. */
  readonly singleWriter: boolean;
  /**
   * A plain read outside any transaction never waits on another transaction's uncommitted write
   * (MVCC reads on PostgreSQL and InnoDB; on SQLite the in-process in-flight registry answers
   * first). False on SQL Server, where a read under locking READ COMMITTED queues behind an
   * in-flight reservation or inbox claim: the gate's replay look-up and the inbox's redelivery
   * read (ReadFirstPolicy) are not used there.
   */
  readonly nonBlockingReads: boolean;
  readonly tables: QuotedTables;
  readonly idempotency: IdempotencySql;
  readonly conditional: ConditionalSql;
  readonly inbox: InboxSql;
  readonly schema: SchemaDdl;
  readonly cleanup: CleanupSql;
  readonly health: HealthSql;
  readonly outbox: OutboxSql;
}

/** Table names as configured (bare) and as used in SQL (schema-qualified, quoted). */
export interface TableNaming {
  schema?: string;
  tables: { idempotency: string; outbox: string; inbox: string };
}

export type TableRef = (name: keyof QuotedTables) => { qualified: string; bare: string };

/** Builds the quoted, schema-qualified names for a dialect's quoting rule. */
export function tableRefs(
  naming: TableNaming,
  quote: (id: string) => string,
  useSchema = true,
): TableRef {
  return (name) => {
    const bare = naming.tables[name];
    const qualified =
      useSchema && naming.schema ? `${quote(naming.schema)}.${quote(bare)}` : quote(bare);
    return { qualified, bare };
  };
}

export function quotedTables(ref: TableRef): QuotedTables {
  return {
    idempotency: ref('idempotency').qualified,
    outbox: ref('outbox').qualified,
    inbox: ref('inbox').qualified,
  };
}

export const bool = (v: unknown): boolean =>
  v === true || v === 1 || v === '1' || v === 't' || v === 'true';
export const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
export const str = (v: unknown): string => String(v);
export const buf = (v: unknown): Buffer | null =>
  v === null || v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array);

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
  };
}

/** DDL of one table (or group of objects): statements to create and to drop it. */
export interface SchemaSql {
  up: string[];
  down: string[];
}

/** What a migration needs to know about the server beyond the dialect. */
export interface ServerFeatures {
  /** SQL Server 2019+: OPTIMIZE_FOR_SEQUENTIAL_KEY on the clustered sequence keys. */
  sequentialKeyOption?: boolean;
}

/** DDL per table. */
export interface SchemaDdl {
  idempotency(features: ServerFeatures): SchemaSql;
  inbox(features: ServerFeatures): SchemaSql;
  outbox(features: ServerFeatures): SchemaSql;
  /**
   * Second outbox migration: an index of dead messages, so that the health check and the backlog
   * gauges count them without reading every sent row the retention keeps.
   */
  outboxDeadIndex(features: ServerFeatures): SchemaSql;
}
