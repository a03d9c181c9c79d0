import { EntitySchema } from 'typeorm';
import type { DialectName, OutboxStatus } from '../dialects';
import { columnTypes } from './column-types';

/** A row of the outbox: one message, from the business transaction that wrote it to its publication. */
export interface OutboxRecord {
  seq: string;
  id: string;
  type: string;
  payload: string;
  headers: string | null;
  partitionKey: string | null;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
  leaseOwner: string | null;
  lockedUntil: Date | null;
  createdAt: Date;
  sentAt: Date | null;
}

export function outboxRecordEntity(
  db: DialectName,
  table: string,
  schema?: string,
): EntitySchema<OutboxRecord> {
  const t = columnTypes(db);
  return new EntitySchema<OutboxRecord>({
    name: 'OutboxRecord',
    tableName: table,
    schema: db === 'sqlite' ? undefined : schema,
    columns: {
      seq: t.id(),
      id: t.ascii(128),
      type: t.ascii(255),
      payload: db === 'mysql' ? { type: 'longtext', nullable: false } : t.text(false),
      headers: t.text(),
      partitionKey: { ...t.string(255, true), name: 'partition_key' },
      status: t.ascii(16),
      attempts: t.int(),
      nextAttemptAt: { ...t.time(), name: 'next_attempt_at' },
      lastError: { ...(db === 'mssql' ? t.string(2000, true) : t.text()), name: 'last_error' },
      leaseOwner: { ...t.ascii(128, true), name: 'lease_owner' },
      lockedUntil: { ...t.time(true), name: 'locked_until' },
      createdAt: { ...t.time(), name: 'created_at' },
      sentAt: { ...t.time(true), name: 'sent_at' },
    },
    uniques: [{ name: `ux_${table}_id`, columns: ['id'] }],
  });
}
