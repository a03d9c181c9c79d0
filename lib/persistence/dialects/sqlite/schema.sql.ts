import type { SchemaDdl } from '../dialect';

export function sqliteSchema(
  table: (name: 'idempotency' | 'outbox' | 'inbox') => { qualified: string; bare: string },
): SchemaDdl {
  return {
    outbox() {
      const { qualified: T, bare: n } = table('outbox');
      return {
        up: [
          `CREATE TABLE ${T} (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id VARCHAR(128) NOT NULL,
            type VARCHAR(255) NOT NULL,
            payload TEXT NOT NULL,
            headers TEXT NULL,
            partition_key VARCHAR(255) NULL,
            status VARCHAR(16) NOT NULL CHECK (status IN ('pending', 'sent', 'dead')),
            attempts INTEGER NOT NULL,
            next_attempt_at DATETIME NOT NULL,
            last_error TEXT NULL,
            lease_owner VARCHAR(128) NULL,
            locked_until DATETIME NULL,
            created_at DATETIME NOT NULL,
            sent_at DATETIME NULL,
            CONSTRAINT ux_${n}_id UNIQUE (id)
          )`,
          `CREATE INDEX ix_${n}_pending ON ${T} (seq) WHERE status = 'pending'`,
          `CREATE INDEX ix_${n}_pending_key ON ${T} (partition_key, seq) WHERE status = 'pending'`,
          `CREATE INDEX ix_${n}_sent_at ON ${T} (sent_at) WHERE status = 'sent'`,
        ],
        down: [`DROP TABLE ${T}`],
      };
    },
    outboxDeadIndex() {
      // Partial: only dead rows are in it, so counting them (health check, backlog gauges) does
      // not read every sent row the retention keeps. SQLite tables have no schema here.
      const { qualified: T, bare: n } = table('outbox');
      return {
        up: [`CREATE INDEX ix_${n}_dead ON ${T} (seq) WHERE status = 'dead'`],
        down: [`DROP INDEX ix_${n}_dead`],
      };
    },
    inbox() {
      const { qualified: T, bare: n } = table('inbox');
      return {
        up: [
          `CREATE TABLE ${T} (
            consumer VARCHAR(200) NOT NULL,
            message_id VARCHAR(255) NOT NULL,
            status VARCHAR(16) NOT NULL CHECK (status IN ('processed', 'retrying', 'failed')),
            attempts INTEGER NOT NULL,
            received_at DATETIME NOT NULL,
            processed_at DATETIME NULL,
            last_error TEXT NULL,
            CONSTRAINT pk_${n} PRIMARY KEY (consumer, message_id)
          )`,
          `CREATE INDEX ix_${n}_received_at ON ${T} (received_at)`,
        ],
        down: [`DROP TABLE ${T}`],
      };
    },
    idempotency() {
      const { qualified: T, bare: n } = table('idempotency');
      return {
        up: [
          `CREATE TABLE ${T} (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            scope VARCHAR(450) NOT NULL,
            idempotency_key VARCHAR(255) NOT NULL,
            request_hash BLOB NOT NULL,
            state VARCHAR(16) NOT NULL CHECK (state IN ('started', 'completed')),
            response_status INTEGER NULL,
            response_headers TEXT NULL,
            response_body BLOB NULL,
            lease_token VARCHAR(64) NULL,
            locked_until DATETIME NULL,
            created_at DATETIME NOT NULL,
            completed_at DATETIME NULL,
            expires_at DATETIME NOT NULL,
            CONSTRAINT ux_${n}_scope_key UNIQUE (scope, idempotency_key)
          )`,
          `CREATE INDEX ix_${n}_expires_at ON ${T} (expires_at)`,
        ],
        down: [`DROP TABLE ${T}`],
      };
    },
  };
}
