import type { QuotedTables } from '../dialect';
import { keyLockSeed } from '../contracts/schema.contract';
import type { SchemaDdl } from '../contracts/schema.contract';
import { addedColumns, createdTable, noDdlChange } from '../portable/schema.sql';

/** MySQL/MariaDB DDL: binary collations so keys are case-sensitive; InnoDB for row locks. */
export function mysqlSchema(
  table: (name: keyof QuotedTables) => { qualified: string; bare: string },
): SchemaDdl {
  return {
    outbox() {
      // No partial indexes: (status, seq) puts the pending rows in one contiguous range in
      // sequence order for the claim; (partition_key, status, seq) serves the ordered mode and
      // (status, sent_at) the retention cleanup. Ids and types are ASCII (validated by the service).
      const { qualified: T, bare: n } = table('outbox');
      return createdTable(T, [
        `CREATE TABLE ${T} (
            seq BIGINT NOT NULL AUTO_INCREMENT,
            id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
            type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
            payload LONGTEXT CHARACTER SET utf8mb4 NOT NULL,
            headers MEDIUMTEXT CHARACTER SET utf8mb4 NULL,
            partition_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
            status VARCHAR(16) NOT NULL,
            attempts INT NOT NULL,
            next_attempt_at DATETIME(3) NOT NULL,
            last_error TEXT CHARACTER SET utf8mb4 NULL,
            lease_owner VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
            locked_until DATETIME(3) NULL,
            created_at DATETIME(3) NOT NULL,
            sent_at DATETIME(3) NULL,
            PRIMARY KEY (seq),
            UNIQUE KEY ux_${n}_id (id),
            KEY ix_${n}_status_seq (status, seq),
            KEY ix_${n}_key_status_seq (partition_key, status, seq),
            KEY ix_${n}_status_sent_at (status, sent_at),
            CONSTRAINT ck_${n}_status CHECK (status IN ('pending', 'sent', 'dead'))
          ) ENGINE=InnoDB`,
      ]);
    },
    outboxKeyLocks() {
      // Locked with SELECT … FOR UPDATE by primary key (record locks only).
      const { qualified: T } = table('outboxKeyLocks');
      return createdTable(T, [
        `CREATE TABLE ${T} (slot INT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (slot)) ENGINE=InnoDB`,
        ...keyLockSeed(T, 512, 'INSERT IGNORE INTO'),
      ]);
    },
    checkNames() {
      // Lower-case CHECK names from the start here: nothing to rename (SQL Server's step).
      return noDdlChange();
    },
    outboxDeadIndex() {
      // Nothing to add: MySQL and MariaDB have no partial indexes, and the outbox's
      // (status, seq) index already serves the count of dead messages.
      return noDdlChange();
    },
    outboxFailureHistory() {
      const { qualified: T } = table('outbox');
      return addedColumns(T, [
        ['failures', 'MEDIUMTEXT CHARACTER SET utf8mb4 NULL'],
        ['failed_at', 'DATETIME(3) NULL'],
      ]);
    },
    outboxRoute() {
      // An instant ADD COLUMN on MySQL 8 / MariaDB 10.3+ (a trailing nullable column).
      const { qualified: T } = table('outbox');
      return addedColumns(T, [['route', 'VARCHAR(64) NULL']]);
    },
    inbox() {
      const { qualified: T, bare: n } = table('inbox');
      return createdTable(T, [
        `CREATE TABLE ${T} (
            consumer VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
            message_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
            status VARCHAR(16) NOT NULL,
            attempts INT NOT NULL,
            received_at DATETIME(3) NOT NULL,
            processed_at DATETIME(3) NULL,
            last_error TEXT CHARACTER SET utf8mb4 NULL,
            PRIMARY KEY (consumer, message_id),
            KEY ix_${n}_received_at (received_at),
            CONSTRAINT ck_${n}_status CHECK (status IN ('processed', 'retrying', 'failed'))
          ) ENGINE=InnoDB`,
      ]);
    },
    idempotency() {
      const { qualified: T, bare: n } = table('idempotency');
      return createdTable(T, [
        `CREATE TABLE ${T} (
            id BIGINT NOT NULL AUTO_INCREMENT,
            scope VARCHAR(450) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
            idempotency_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
            request_hash VARBINARY(32) NOT NULL,
            state VARCHAR(16) NOT NULL,
            response_status INT NULL,
            response_headers MEDIUMTEXT CHARACTER SET utf8mb4 NULL,
            response_body LONGBLOB NULL,
            lease_token VARCHAR(64) NULL,
            locked_until DATETIME(3) NULL,
            created_at DATETIME(3) NOT NULL,
            completed_at DATETIME(3) NULL,
            expires_at DATETIME(3) NOT NULL,
            PRIMARY KEY (id),
            UNIQUE KEY ux_${n}_scope_key (scope, idempotency_key),
            KEY ix_${n}_expires_at (expires_at),
            CONSTRAINT ck_${n}_state CHECK (state IN ('started', 'completed'))
          ) ENGINE=InnoDB`,
      ]);
    },
  };
}
