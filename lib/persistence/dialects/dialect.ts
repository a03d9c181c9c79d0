import type { SqlExecutor } from '../sql-executor';
import type { CleanupSql } from './contracts/cleanup.contract';
import type { ConditionalSql } from './contracts/conditional.contract';
import type { HealthSql } from './contracts/health.contract';
import type { InboxSql } from './contracts/inbox.contract';
import type { OutboxSql } from './contracts/outbox.contract';
import type { SchemaDdl } from './contracts/schema.contract';
import { bool, buf, num, str } from './row-mappers';

/*
 * The dialect: one object per database family with a facet per feature (contracts/), the
 * quoted table names and the family's traits. The idempotency-ledger facet is declared here.
 */

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

/** The facets of a dialect, built for its quoted table names. */
export type DialectFacets = Omit<Dialect, 'name' | 'singleWriter' | 'nonBlockingReads' | 'tables'>;

/** What makes one database family: its traits, its quoting rule, and its facets. */
export interface DialectFamily extends Pick<Dialect, 'name' | 'singleWriter' | 'nonBlockingReads'> {
  quote(id: string): string;
  /** False where tables are named bare (SQLite has no schemas). */
  useSchema?: boolean;
  facets(tables: QuotedTables, ref: TableRef): DialectFacets;
}

/** Builds a family's dialect for the configured table names. */
export function assembleDialect(naming: TableNaming, family: DialectFamily): Dialect {
  const ref = tableRefs(naming, family.quote, family.useSchema ?? true);
  const tables = quotedTables(ref);
  const { name, singleWriter, nonBlockingReads } = family;
  return { name, singleWriter, nonBlockingReads, tables, ...family.facets(tables, ref) };
}

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
