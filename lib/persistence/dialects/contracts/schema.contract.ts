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
  /**
   * CHECK constraints named in lower case (`ck_<table>_<column>`) on every database. SQL Server
   * only: tables created before the create migrations said `ck_` have `CK_` names, renamed here;
   * elsewhere the names always were lower case. Babelfish lower-cases every constraint name it
   * reports, so only lower-case names read back as declared there (TypeORM matches checks by name).
   */
  checkNames(features: ServerFeatures): SchemaSql;
  /**
   * The outbox's key-lock slots (`<outbox>_key_locks`): {@link OUTBOX_KEY_LOCK_SLOTS} rows
   * (slot 0..n-1), created with the table. An ordered transaction locks the slots of its
   * messages' partition keys right before its COMMIT (OutboxSql.lockKeySlots).
   */
  outboxKeyLocks(features: ServerFeatures): SchemaSql;
  /**
   * The outbox's failure history: `failures` (JSON text: the newest failed attempts, each with
   * its time, relay, error class and message) and `failed_at` (the last failed attempt, on the
   * database clock), which the dead-letter filters of the admin read.
   */
  outboxFailureHistory(features: ServerFeatures): SchemaSql;
  /**
   * The outbox's `route` column: the name of the publisher a message goes to, resolved by
   * `outbox.route` when the message is added and never changed afterwards (a retry goes where
   * the first attempt went). NULL (rows written before this migration, or by a version without
   * routes) means the publisher named `default`.
   */
  outboxRoute(features: ServerFeatures): SchemaSql;
}

/**
 * Number of key-lock slots: a partition key locks slot `hash(key) mod n`. Two keys that share a
 * slot only wait for each other's COMMIT step (milliseconds), never for an open transaction.
 * Fixed: every process must hash a key to the same slot.
 */
export const OUTBOX_KEY_LOCK_SLOTS = 1024;

/**
 * The seed of the key-lock table: INSERT statements of `perStatement` slots each. `insert` is the
 * verb: `INSERT OR IGNORE INTO` (SQLite) and `INSERT IGNORE INTO` (MySQL) keep the schema script,
 * which has no per-migration guard there, safe to run twice.
 */
export function keyLockSeed(T: string, perStatement: number, insert = 'INSERT INTO'): string[] {
  const out: string[] = [];
  for (let from = 0; from < OUTBOX_KEY_LOCK_SLOTS; from += perStatement) {
    const to = Math.min(OUTBOX_KEY_LOCK_SLOTS, from + perStatement);
    const values = Array.from({ length: to - from }, (_, i) => `(${from + i}, 0)`);
    out.push(`${insert} ${T} (slot, n) VALUES ${values.join(', ')}`);
  }
  return out;
}

/** One library migration as the schema script prints it: its TypeORM name and statements. */
export interface ScriptMigration {
  /** The class name TypeORM records (e.g. `CreateOutboxMessages1763700000200`). */
  name: string;
  /** The 13-digit timestamp TypeORM reads from the end of the name. */
  timestamp: number;
  up: string[];
}

export interface SchemaScriptOptions {
  /** Schema of the library's tables, created when missing (SQL Server, PostgreSQL). */
  schema?: string;
  /** TypeORM's migrations table (the DataSource's `migrationsTableName`, default `migrations`). */
  migrationsTable: string;
  /** Comment lines printed at the top. */
  header: string[];
}

/**
 * The script a DBA reviews and runs instead of the app's migrations: every migration guarded
 * (skipped when TypeORM's migrations table records it) and recorded there once applied, so that
 * re-running the script changes nothing and an app that lists the migrations finds them applied.
 */
export type SchemaScriptWriter = (
  migrations: readonly ScriptMigration[],
  options: SchemaScriptOptions,
) => string;
