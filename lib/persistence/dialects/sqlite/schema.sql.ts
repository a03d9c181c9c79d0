import type { QuotedTables } from '../dialect';
import { keyLockSeed } from '../contracts/schema.contract';
import type { SchemaDdl } from '../contracts/schema.contract';
import { addedColumns, createdTable, noDdlChange } from '../portable/schema.sql';

/**
 * SQLite DDL, written in the form TypeORM's SQLite driver writes and reads back (quoted names,
 * one line per table, named UNIQUE and CHECK constraints, `PRIMARY KEY AUTOINCREMENT NOT NULL`):
 * TypeORM learns a SQLite table's AUTOINCREMENT column, unique and check constraints by parsing
 * the `CREATE TABLE` text in sqlite_master, with patterns that only match that form. So the
 * entities (persistence/entities) and these tables compare equal, and `synchronize` alone
 * creates the same text. (A database migrated before this form, whose DDL was unquoted, works
 * the same; only TypeORM's schema builder reads it as different.)
 */
export function sqliteSchema(
  table: (name: keyof QuotedTables) => { qualified: string; bare: string },
): SchemaDdl {
  const q = (id: string) => `"${id.replace(/"/g, '""')}"`;
  const createTable = (T: string, definitions: string[]) =>
    `CREATE TABLE ${T} (${definitions.join(', ')})`;
  return {
    outbox() {
      const { qualified: T, bare: n } = table('outbox');
      return createdTable(T, [
        createTable(T, [
          `"seq" integer PRIMARY KEY AUTOINCREMENT NOT NULL`,
          `"id" varchar(128) NOT NULL`,
          `"type" varchar(255) NOT NULL`,
          `"payload" text NOT NULL`,
          `"headers" text`,
          `"partition_key" varchar(255)`,
          `"status" varchar(16) NOT NULL`,
          `"attempts" integer NOT NULL`,
          `"next_attempt_at" datetime NOT NULL`,
          `"last_error" text`,
          `"lease_owner" varchar(128)`,
          `"locked_until" datetime`,
          `"created_at" datetime NOT NULL`,
          `"sent_at" datetime`,
          `CONSTRAINT ${q(`ux_${n}_id`)} UNIQUE ("id")`,
          `CONSTRAINT ${q(`ck_${n}_status`)} CHECK (status IN ('pending', 'sent', 'dead'))`,
        ]),
        `CREATE INDEX ${q(`ix_${n}_pending`)} ON ${T} ("seq") WHERE status = 'pending'`,
        `CREATE INDEX ${q(`ix_${n}_pending_key`)} ON ${T} ("partition_key", "seq") WHERE status = 'pending'`,
        `CREATE INDEX ${q(`ix_${n}_sent_at`)} ON ${T} ("sent_at") WHERE status = 'sent'`,
      ]);
    },
    outboxKeyLocks() {
      // Created for one schema on every database; SQLite's single writer never needs to lock it.
      const { qualified: T } = table('outboxKeyLocks');
      return createdTable(T, [
        createTable(T, [`"slot" integer PRIMARY KEY NOT NULL`, `"n" bigint NOT NULL`]),
        ...keyLockSeed(T, 512, 'INSERT OR IGNORE INTO'),
      ]);
    },
    checkNames() {
      // Lower-case CHECK names from the start here: nothing to rename (SQL Server's step).
      return noDdlChange();
    },
    outboxDeadIndex() {
      // Partial: only dead rows are in it, so counting them (health check, backlog gauges) does
      // not read every sent row the retention keeps. SQLite tables have no schema here.
      const { qualified: T, bare: n } = table('outbox');
      return {
        up: [`CREATE INDEX ${q(`ix_${n}_dead`)} ON ${T} ("seq") WHERE status = 'dead'`],
        down: [`DROP INDEX ${q(`ix_${n}_dead`)}`],
      };
    },
    outboxFailureHistory() {
      // One column per ALTER TABLE on SQLite; DROP COLUMN needs SQLite 3.35 or later.
      const { qualified: T } = table('outbox');
      return addedColumns(
        T,
        [
          ['"failures"', 'text'],
          ['"failed_at"', 'datetime'],
        ],
        true,
      );
    },
    outboxRoute() {
      // DROP COLUMN needs SQLite 3.35 (better-sqlite3 bundles a newer one).
      const { qualified: T } = table('outbox');
      return addedColumns(T, [['"route"', 'varchar(64)']], true);
    },
    inbox() {
      const { qualified: T, bare: n } = table('inbox');
      return createdTable(T, [
        createTable(T, [
          `"consumer" varchar(200) NOT NULL`,
          `"message_id" varchar(255) NOT NULL`,
          `"status" varchar(16) NOT NULL`,
          `"attempts" integer NOT NULL`,
          `"received_at" datetime NOT NULL`,
          `"processed_at" datetime`,
          `"last_error" text`,
          `CONSTRAINT ${q(`ck_${n}_status`)} CHECK (status IN ('processed', 'retrying', 'failed'))`,
          `PRIMARY KEY ("consumer", "message_id")`,
        ]),
        `CREATE INDEX ${q(`ix_${n}_received_at`)} ON ${T} ("received_at")`,
      ]);
    },
    idempotency() {
      const { qualified: T, bare: n } = table('idempotency');
      return createdTable(T, [
        createTable(T, [
          `"id" integer PRIMARY KEY AUTOINCREMENT NOT NULL`,
          `"scope" varchar(450) NOT NULL`,
          `"idempotency_key" varchar(255) NOT NULL`,
          `"request_hash" blob NOT NULL`,
          `"state" varchar(16) NOT NULL`,
          `"response_status" integer`,
          `"response_headers" text`,
          `"response_body" blob`,
          `"lease_token" varchar(64)`,
          `"locked_until" datetime`,
          `"created_at" datetime NOT NULL`,
          `"completed_at" datetime`,
          `"expires_at" datetime NOT NULL`,
          `CONSTRAINT ${q(`ux_${n}_scope_key`)} UNIQUE ("scope", "idempotency_key")`,
          `CONSTRAINT ${q(`ck_${n}_state`)} CHECK (state IN ('started', 'completed'))`,
        ]),
        `CREATE INDEX ${q(`ix_${n}_expires_at`)} ON ${T} ("expires_at")`,
      ]);
    },
  };
}
