/*
  nestjs-exactly-once: the SQL Server schema, as a plain T-SQL script for a DBA.

  It creates the same objects as the library's TypeORM migrations (getIdempotencyMigrations())
  on SQL Server 2019+ / Azure SQL Database / Azure SQL Managed Instance:
    - the idempotency ledger  (default [dbo].[idempotency_records])
    - the outbox              (default [dbo].[outbox_messages])
    - the inbox               (default [dbo].[inbox_messages])
  The test suite checks that these statements match the migrations' DDL (test/unit/ops-sql-script.spec.ts).

  Names are sqlcmd scripting variables. Run it with sqlcmd (or SSMS / Azure Data Studio in
  SQLCMD mode), overriding any of them on the command line:

    sqlcmd -S myserver -d mydb -C -b -i docs/sql/mssql-schema.sql \
      -v Schema=payments IdempotencyTable=idem_keys OutboxTable=outbox InboxTable=inbox

  Pass the same names to the module and to the migrations / entities helpers:
    IdempotencyModule.forRoot({ schema: 'payments', tables: { idempotency: 'idem_keys', outbox: 'outbox', inbox: 'inbox' } })
    getIdempotencyEntities({ type: 'mssql', schema: 'payments', tables: { ... } })
  Names must be plain identifiers ([A-Za-z_][A-Za-z0-9_]*, at most 128 characters).

  Design notes
    - Every table is clustered on an ever-increasing key (BIGINT IDENTITY, or received_at for the
      inbox): inserts append at the end of the B-tree. OPTIMIZE_FOR_SEQUENTIAL_KEY = ON (SQL
      Server 2019+, Azure SQL) relieves last-page insert contention under many concurrent
      inserts. On SQL Server 2016/2017 delete the three "WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)"
      clauses (the migrations leave them out there, and on Babelfish).
    - Idempotency keys, scopes, message ids and partition keys use the binary collation
      Latin1_General_100_BIN2: keys that differ only in case or accents are different keys,
      whatever the database's default collation.
    - Times are DATETIME2(3) in UTC, written and compared on the database clock (SYSUTCDATETIME()).
    - Hashes and stored response bodies are VARBINARY; JSON payloads and headers NVARCHAR(MAX).
    - The outbox has a filtered index of the pending rows (what the relay claims, in sequence
      order; sent rows, however many, are not in it), one of pending rows per partition key (the
      ordered mode) and one of sent rows by sent time (retention cleanup).
    - Filtered indexes need ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT,
      CONCAT_NULL_YIELDS_NULL, QUOTED_IDENTIFIER ON and NUMERIC_ROUNDABORT OFF when they are
      created and on every connection that writes the table (the mssql/tedious driver sets them).
    - Retention cleanup deletes at most cleanup.batchSize (<= 4,000) rows per statement, below the
      5,000 locks per table reference that trigger lock escalation, with READPAST (and
      READCOMMITTEDLOCK when READ_COMMITTED_SNAPSHOT is ON).

  If you create the tables with this script, do not also run the library's migrations: either
  leave getIdempotencyMigrations() out of the DataSource, or record them as applied (section 5).
*/

:setvar Schema dbo
:setvar IdempotencyTable idempotency_records
:setvar OutboxTable outbox_messages
:setvar InboxTable inbox_messages

:on error exit

SET ANSI_NULLS ON;
SET ANSI_PADDING ON;
SET ANSI_WARNINGS ON;
SET ARITHABORT ON;
SET CONCAT_NULL_YIELDS_NULL ON;
SET QUOTED_IDENTIFIER ON;
SET NUMERIC_ROUNDABORT OFF;
GO

/* 1. Schema ------------------------------------------------------------------------------ */
IF SCHEMA_ID(N'$(Schema)') IS NULL
  EXEC (N'CREATE SCHEMA [$(Schema)]');
GO

/* 2. Idempotency ledger: one row per (scope, key). ---------------------------------------- */
IF OBJECT_ID(N'[$(Schema)].[$(IdempotencyTable)]', N'U') IS NULL
BEGIN
  CREATE TABLE [$(Schema)].[$(IdempotencyTable)] (
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
    CONSTRAINT PK_$(IdempotencyTable) PRIMARY KEY CLUSTERED (id) WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON),
    CONSTRAINT ck_$(IdempotencyTable)_state CHECK (state IN ('started', 'completed'))
  );
  -- The reservation: a duplicate key fails on this index (2601) or waits on its key lock.
  CREATE UNIQUE NONCLUSTERED INDEX UX_$(IdempotencyTable)_scope_key ON [$(Schema)].[$(IdempotencyTable)] (scope, idempotency_key);
  -- Retention cleanup walks expired rows in expiry order.
  CREATE NONCLUSTERED INDEX IX_$(IdempotencyTable)_expires_at ON [$(Schema)].[$(IdempotencyTable)] (expires_at);
END;
GO

/* 3. Outbox: events written in the business transaction, published by the relay. ---------- */
IF OBJECT_ID(N'[$(Schema)].[$(OutboxTable)]', N'U') IS NULL
BEGIN
  CREATE TABLE [$(Schema)].[$(OutboxTable)] (
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
    CONSTRAINT PK_$(OutboxTable) PRIMARY KEY CLUSTERED (seq) WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON),
    CONSTRAINT ck_$(OutboxTable)_status CHECK (status IN ('pending', 'sent', 'dead'))
  );
  -- Consumers de-duplicate by this id: unique.
  CREATE UNIQUE NONCLUSTERED INDEX UX_$(OutboxTable)_id ON [$(Schema)].[$(OutboxTable)] (id);
  -- The relay's claim: pending rows in sequence order (filtered: sent rows are not in it).
  CREATE NONCLUSTERED INDEX IX_$(OutboxTable)_pending ON [$(Schema)].[$(OutboxTable)] (seq) INCLUDE (next_attempt_at, locked_until, partition_key) WHERE status = 'pending';
  -- Ordered mode: "is an older message of this partition key still pending?"
  CREATE NONCLUSTERED INDEX IX_$(OutboxTable)_pending_key ON [$(Schema)].[$(OutboxTable)] (partition_key, seq) WHERE status = 'pending';
  -- Retention cleanup of sent rows.
  CREATE NONCLUSTERED INDEX IX_$(OutboxTable)_sent_at ON [$(Schema)].[$(OutboxTable)] (sent_at) WHERE status = 'sent';
END;
GO

/* 3b. Outbox, second migration (AddOutboxDeadIndex1763700000400): dead messages, counted by the
       health check and the backlog gauges without scanning every sent row. Also run on a
       database created by an earlier version of this script. ------------------------------ */
-- (LIKE: Babelfish lists the index as ix_<table>_dead followed by the table name and a hash.)
IF NOT EXISTS (SELECT 1 FROM sys.indexes
                WHERE object_id = OBJECT_ID(N'[$(Schema)].[$(OutboxTable)]')
                  AND name LIKE N'IX[_]$(OutboxTable)[_]dead%')
  CREATE NONCLUSTERED INDEX IX_$(OutboxTable)_dead ON [$(Schema)].[$(OutboxTable)] (seq) WHERE status = 'dead';
GO

/* 4. Inbox: one row per (consumer, message id) handled. ----------------------------------- */
IF OBJECT_ID(N'[$(Schema)].[$(InboxTable)]', N'U') IS NULL
BEGIN
  CREATE TABLE [$(Schema)].[$(InboxTable)] (
    consumer NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NOT NULL,
    message_id NVARCHAR(255) COLLATE Latin1_General_100_BIN2 NOT NULL,
    status VARCHAR(16) NOT NULL,
    attempts INT NOT NULL,
    received_at DATETIME2(3) NOT NULL,
    processed_at DATETIME2(3) NULL,
    last_error NVARCHAR(4000) NULL,
    CONSTRAINT PK_$(InboxTable) PRIMARY KEY NONCLUSTERED (consumer, message_id),
    CONSTRAINT ck_$(InboxTable)_status CHECK (status IN ('processed', 'retrying', 'failed'))
  );
  -- Clustered on arrival time: inserts append, retention cleanup deletes the oldest range.
  CREATE CLUSTERED INDEX CX_$(InboxTable)_received_at ON [$(Schema)].[$(InboxTable)] (received_at) WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON);
END;
GO

/* 4b. CHECK constraints in lower case (LowerCaseCheckNames1763700000500): a database created
       by an earlier version of this script or of the migrations has them as CK_<table>_…;
       renamed here through a temporary name (sp_rename, a metadata change). Nothing to do where
       they already are ck_<table>_… (this version; Babelfish, which lower-cases them). ------- */
IF EXISTS (SELECT 1 FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'[$(Schema)].[$(IdempotencyTable)]')
            AND name = N'CK_$(IdempotencyTable)_state' COLLATE Latin1_General_100_BIN2)
BEGIN
  EXEC sp_rename N'[$(Schema)].[CK_$(IdempotencyTable)_state]', N'ck_$(IdempotencyTable)_state__renaming', N'OBJECT';
  EXEC sp_rename N'[$(Schema)].[ck_$(IdempotencyTable)_state__renaming]', N'ck_$(IdempotencyTable)_state', N'OBJECT';
END;
IF EXISTS (SELECT 1 FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'[$(Schema)].[$(OutboxTable)]')
            AND name = N'CK_$(OutboxTable)_status' COLLATE Latin1_General_100_BIN2)
BEGIN
  EXEC sp_rename N'[$(Schema)].[CK_$(OutboxTable)_status]', N'ck_$(OutboxTable)_status__renaming', N'OBJECT';
  EXEC sp_rename N'[$(Schema)].[ck_$(OutboxTable)_status__renaming]', N'ck_$(OutboxTable)_status', N'OBJECT';
END;
IF EXISTS (SELECT 1 FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'[$(Schema)].[$(InboxTable)]')
            AND name = N'CK_$(InboxTable)_status' COLLATE Latin1_General_100_BIN2)
BEGIN
  EXEC sp_rename N'[$(Schema)].[CK_$(InboxTable)_status]', N'ck_$(InboxTable)_status__renaming', N'OBJECT';
  EXEC sp_rename N'[$(Schema)].[ck_$(InboxTable)_status__renaming]', N'ck_$(InboxTable)_status', N'OBJECT';
END;
GO

/* 5. Optional: record the library's migrations as applied, so that a DataSource that lists
      getIdempotencyMigrations() does not try to create the tables again. Uncomment, and use
      the migrations table of your DataSource (TypeORM's default: [dbo].[migrations]). ----- */
-- INSERT INTO [dbo].[migrations] ([timestamp], [name]) VALUES
--   (1763700000000, N'CreateIdempotencyRecords1763700000000'),
--   (1763700000200, N'CreateOutboxMessages1763700000200'),
--   (1763700000300, N'CreateInboxMessages1763700000300'),
--   (1763700000400, N'AddOutboxDeadIndex1763700000400'),
--   (1763700000500, N'LowerCaseCheckNames1763700000500');
-- GO

/* 6. Optional: what the application's database user needs (no DDL rights at run time).
      Reading sys.databases for the current database (READ_COMMITTED_SNAPSHOT detection) needs
      no extra permission. ------------------------------------------------------------------ */
-- GRANT SELECT, INSERT, UPDATE, DELETE ON [$(Schema)].[$(IdempotencyTable)] TO [app_user];
-- GRANT SELECT, INSERT, UPDATE, DELETE ON [$(Schema)].[$(OutboxTable)] TO [app_user];
-- GRANT SELECT, INSERT, UPDATE, DELETE ON [$(Schema)].[$(InboxTable)] TO [app_user];
-- GO

/* 7. Rollback (the migrations' down): drops the tables and everything in them.
-- DROP TABLE IF EXISTS [$(Schema)].[$(InboxTable)];
-- DROP TABLE IF EXISTS [$(Schema)].[$(OutboxTable)];
-- DROP TABLE IF EXISTS [$(Schema)].[$(IdempotencyTable)];
-- GO
*/
