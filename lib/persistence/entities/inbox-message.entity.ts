import { EntitySchema } from 'typeorm';
import type { DialectName, InboxStatus } from '../dialects';
import { columnTypes } from './column-types';

/** A row of the inbox: one message id as seen by one consumer. */
export interface InboxMessage {
  consumer: string;
  messageId: string;
  status: InboxStatus;
  attempts: number;
  receivedAt: Date;
  processedAt: Date | null;
  lastError: string | null;
}

export function inboxMessageEntity(
  db: DialectName,
  table: string,
  schema?: string,
): EntitySchema<InboxMessage> {
  const t = columnTypes(db);
  return new EntitySchema<InboxMessage>({
    name: 'InboxMessage',
    tableName: table,
    schema: db === 'sqlite' ? undefined : schema,
    columns: {
      consumer: { ...t.string(200), primary: true },
      messageId: { ...t.string(255), name: 'message_id', primary: true },
      status: t.ascii(16),
      attempts: t.int(),
      receivedAt: { ...t.time(), name: 'received_at' },
      processedAt: { ...t.time(true), name: 'processed_at' },
      lastError: { ...(db === 'mssql' ? t.string(4000, true) : t.text()), name: 'last_error' },
    },
    indices: [{ name: `ix_${table}_received_at`, columns: ['receivedAt'] }],
  });
}
