import type { QuotedTables } from '../dialect';
import { keyLockSeed, type SchemaDdl, type ServerFeatures } from '../contracts/schema.contract';
import { quoteMssql } from './mssql.helpers';

/**
 * SQL Server DDL. Keys and scopes use a binary collation (Latin1_General_100_BIN2) so that
 * keys differing only in case are different keys, whatever the database's default collation.
 */
export function mssqlSchema(
  table: (name: keyof QuotedTables) => { qualified: string; bare: string },
): SchemaDdl {
  const withSeq = (f: ServerFeatures) =>
    f.sequentialKeyOption ? ' WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)' : '';
  return {
    outbox(f) {
      // Clustered on the BIGINT IDENTITY sequence: inserts append (OPTIMIZE_FOR_SEQUENTIAL_KEY on
      // 2019+ against last-page insert contention). The claim reads the small filtered index of
      // pending rows in sequence order (the sent rows, millions of them, are not in it); the
      // ordered mode's "older pending row of this key" test seeks the second filtered index; the
      // retention cleanup reads the filtered index of sent rows. Filtered indexes need the SET
      // options ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT, CONCAT_NULL_YIELDS_NULL,
      // QUOTED_IDENTIFIER ON and NUMERIC_ROUNDABORT OFF on every connection that writes the
      // table (tedious, under mssql, sets them).
      const { qualified: T, bare: n } = table('outbox');
      return {
        up: [
          `CREATE TABLE ${T} (
            seq BIGINT IDENTITY(1,1) NOT NULL,
            id VARCHAR(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
            type VARCHAR(255) COLLATE Latin1_General_100_BIN2 NOT NULL,
            payload NVARCHAR(MAX) NOT NULL,
            headers NVARCHAR(MAX) NULL,
            partition_key NVARCHAR(255) COLLATE Latin1_General_100_BIN2 NULL,
            status VARCHAR(16) NOT NULL,
            attempts INT NOT NULL,
            next_attempt_at DATETIME2(3) NOT NULL,
            last_error NVARCHAR(2000) NULL,
            lease_owner VARCHAR(128) NULL,
            locked_until DATETIME2(3) NULL,
            created_at DATETIME2(3) NOT NULL,
            sent_at DATETIME2(3) NULL,
            CONSTRAINT PK_${n} PRIMARY KEY CLUSTERED (seq)${withSeq(f)},
            CONSTRAINT ck_${n}_status CHECK (status IN ('pending', 'sent', 'dead'))
          )`,
          `CREATE UNIQUE NONCLUSTERED INDEX UX_${n}_id ON ${T} (id)`,
          `CREATE NONCLUSTERED INDEX IX_${n}_pending ON ${T} (seq) INCLUDE (next_attempt_at, locked_until, partition_key) WHERE status = 'pending'`,
          `CREATE NONCLUSTERED INDEX IX_${n}_pending_key ON ${T} (partition_key, seq) WHERE status = 'pending'`,
          `CREATE NONCLUSTERED INDEX IX_${n}_sent_at ON ${T} (sent_at) WHERE status = 'sent'`,
        ],
        down: [`DROP TABLE ${T}`],
      };
    },
    outboxKeyLocks() {
      // Locked by an UPDATE (an X row lock to the end of the transaction on SQL Server; a row
      // lock on Babelfish, which ignores lock hints, so no hint is relied on). 512 rows per
      // INSERT: SQL Server takes at most 1,000 rows in one VALUES list.
      const { qualified: T, bare: n } = table('outboxKeyLocks');
      return {
        up: [
          `CREATE TABLE ${T} (slot INT NOT NULL CONSTRAINT PK_${n} PRIMARY KEY CLUSTERED, n BIGINT NOT NULL)`,
          ...keyLockSeed(T, 512),
        ],
        down: [`DROP TABLE ${T}`],
      };
    },
    outboxDeadIndex() {
      // Filtered: only dead rows are in it, so the health check's and the gauges' count of dead
      // messages reads this small index instead of scanning the clustered index of every sent
      // row the retention keeps.
      const { qualified: T, bare: n } = table('outbox');
      return {
        up: [`CREATE NONCLUSTERED INDEX IX_${n}_dead ON ${T} (seq) WHERE status = 'dead'`],
        down: [`DROP INDEX IX_${n}_dead ON ${T}`],
      };
    },
    outboxFailureHistory() {
      // Two nullable columns without a default: a metadata-only change (no rewrite of the rows).
      // One column per statement: Babelfish refuses a list of columns in one ADD.
      const { qualified: T } = table('outbox');
      return {
        up: [
          `ALTER TABLE ${T} ADD failures NVARCHAR(MAX) NULL`,
          `ALTER TABLE ${T} ADD failed_at DATETIME2(3) NULL`,
        ],
        down: [`ALTER TABLE ${T} DROP COLUMN failed_at`, `ALTER TABLE ${T} DROP COLUMN failures`],
      };
    },
    outboxRoute() {
      // A nullable column without a default: a metadata-only change on SQL Server.
      const { qualified: T } = table('outbox');
      return {
        up: [`ALTER TABLE ${T} ADD route VARCHAR(64) NULL`],
        down: [`ALTER TABLE ${T} DROP COLUMN route`],
      };
    },
    checkNames() {
      // Each CHECK constraint a create migration of an earlier version named `CK_…` gets its
      // lower-case name, through sp_rename (@objtype OBJECT, @objname schema.constraint; a
      // metadata change, no scan of the table). Guarded by a binary comparison, so a table that
      // already has the lower-case name (created by this version, or on Babelfish, which stores
      // every constraint name in lower case and cannot rename constraints) is left alone. Two
      // renames, through a temporary name, so that nothing depends on how sp_rename treats a new
      // name equal to the old one under a case-insensitive collation. Down: nothing (the create
      // migrations give the lower-case names now).
      const lit = (s: string) => `N'${s.replace(/'/g, "''")}'`;
      const rename = (kind: 'idempotency' | 'outbox' | 'inbox', column: string) => {
        const { qualified: T, bare: n } = table(kind);
        const owner = T.slice(0, T.length - quoteMssql(n).length);
        const [from, to] = [`CK_${n}_${column}`, `ck_${n}_${column}`];
        const via = `${to}__renaming`;
        return `IF EXISTS (SELECT 1 FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(${lit(T)}) AND name = ${lit(from)} COLLATE Latin1_General_100_BIN2)
          BEGIN
            EXEC sp_rename ${lit(owner + quoteMssql(from))}, ${lit(via)}, N'OBJECT';
            EXEC sp_rename ${lit(owner + quoteMssql(via))}, ${lit(to)}, N'OBJECT';
          END`;
      };
      return {
        up: [rename('idempotency', 'state'), rename('outbox', 'status'), rename('inbox', 'status')],
        down: [],
      };
    },
    inbox(f) {
      // Clustered on received_at: inserts append (OPTIMIZE_FOR_SEQUENTIAL_KEY on 2019+) and the
      // retention cleanup deletes a contiguous range of the oldest rows; every claim seeks the
      // narrow nonclustered primary key (consumer, message_id), whose key lock is what a concurrent
      // duplicate waits on. Ids compare byte-wise (binary collation), like idempotency keys.
      const { qualified: T, bare: n } = table('inbox');
      return {
        up: [
          `CREATE TABLE ${T} (
            consumer NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NOT NULL,
            message_id NVARCHAR(255) COLLATE Latin1_General_100_BIN2 NOT NULL,
            status VARCHAR(16) NOT NULL,
            attempts INT NOT NULL,
            received_at DATETIME2(3) NOT NULL,
            processed_at DATETIME2(3) NULL,
            last_error NVARCHAR(4000) NULL,
            CONSTRAINT PK_${n} PRIMARY KEY NONCLUSTERED (consumer, message_id),
            CONSTRAINT ck_${n}_status CHECK (status IN ('processed', 'retrying', 'failed'))
          )`,
          `CREATE CLUSTERED INDEX CX_${n}_received_at ON ${T} (received_at)${withSeq(f)}`,
        ],
        down: [`DROP TABLE ${T}`],
      };
    },
    idempotency(f) {
      const { qualified: T, bare: n } = table('idempotency');
      return {
        up: [
          `CREATE TABLE ${T} (
            id BIGINT IDENTITY(1,1) NOT NULL,
            scope NVARCHAR(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
            idempotency_key NVARCHAR(255) COLLATE Latin1_General_100_BIN2 NOT NULL,
            request_hash VARBINARY(32) NOT NULL,
            state VARCHAR(16) NOT NULL,
            response_status INT NULL,
            response_headers NVARCHAR(MAX) NULL,
            response_body VARBINARY(MAX) NULL,
            lease_token VARCHAR(64) NULL,
            locked_until DATETIME2(3) NULL,
            created_at DATETIME2(3) NOT NULL,
            completed_at DATETIME2(3) NULL,
            expires_at DATETIME2(3) NOT NULL,
            CONSTRAINT PK_${n} PRIMARY KEY CLUSTERED (id)${withSeq(f)},
            CONSTRAINT ck_${n}_state CHECK (state IN ('started', 'completed'))
          )`,
          `CREATE UNIQUE NONCLUSTERED INDEX UX_${n}_scope_key ON ${T} (scope, idempotency_key)`,
          `CREATE NONCLUSTERED INDEX IX_${n}_expires_at ON ${T} (expires_at)`,
        ],
        down: [`DROP TABLE ${T}`],
      };
    },
  };
}
