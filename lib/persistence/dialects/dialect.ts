import type { AnswersSql } from './contracts/answers.contract';
import type { CleanupSql } from './contracts/cleanup.contract';
import type { ConditionalSql } from './contracts/conditional.contract';
import type { ConsoleSql } from './contracts/console.contract';
import type { HealthSql } from './contracts/health.contract';
import type { IdempotencySql } from './contracts/idempotency.contract';
import type { InboxSql } from './contracts/inbox.contract';
import type { OutboxSql } from './contracts/outbox.contract';
import type { SchemaDdl } from './contracts/schema.contract';

/*
 * The dialect: one object per database family with a facet per feature (contracts/), the
 * quoted table names and the family's traits.
 */

/** The database families the library speaks. */
export type DialectName = 'mssql' | 'postgres' | 'mysql' | 'sqlite';

/** Names of the tables, already quoted for the dialect. */
export interface QuotedTables {
  idempotency: string;
  outbox: string;
  inbox: string;
  /**
   * The outbox's partition-key lock slots (named after the outbox table, `<outbox>_key_locks`):
   * the rows an ordered transaction locks right before its COMMIT (see OutboxSql.lockKeySlots).
   */
  outboxKeyLocks: string;
}

/** The bare name of the outbox's key-lock table for an outbox table name. */
export const outboxKeyLocksName = (outbox: string): string => `${outbox}_key_locks`;

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
  readonly console: ConsoleSql;
  /** The stored-answer re-encryption job's statements. */
  readonly answers: AnswersSql;
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
    const bare =
      name === 'outboxKeyLocks' ? outboxKeyLocksName(naming.tables.outbox) : naming.tables[name];
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
    outboxKeyLocks: ref('outboxKeyLocks').qualified,
  };
}

/** The facets of a dialect, built for its quoted table names. */
export type DialectFacets = Omit<Dialect, 'name' | 'singleWriter' | 'nonBlockingReads' | 'tables'>;

/** What makes one database family: its traits, its quoting rule, and its facets. */
export interface DialectFamily extends Pick<Dialect, 'name'> {
  /** One writer at a time (see Dialect.singleWriter); false when left out (server databases). */
  singleWriter?: boolean;
  /** Reads never wait on writes (see Dialect.nonBlockingReads); true when left out (MVCC). */
  nonBlockingReads?: boolean;
  quote(id: string): string;
  /** False where tables are named bare (SQLite has no schemas). */
  useSchema?: boolean;
  facets(tables: QuotedTables, ref: TableRef): DialectFacets;
}

/** Builds a family's dialect for the configured table names. */
export function assembleDialect(naming: TableNaming, family: DialectFamily): Dialect {
  const ref = tableRefs(naming, family.quote, family.useSchema ?? true);
  const tables = quotedTables(ref);
  const { name, singleWriter = false, nonBlockingReads = true } = family;
  return { name, singleWriter, nonBlockingReads, tables, ...family.facets(tables, ref) };
}
