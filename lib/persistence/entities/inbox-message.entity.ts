import { EntitySchema } from 'typeorm';
import type { DialectName, InboxRow } from '../dialects';
import { columnTypes, constraintName, entityTable, namedPrimaryKey } from './column-types';

/** A row of the inbox: one message id as seen by one consumer (as the dialects read it). */
export type InboxMessage = InboxRow;

/**
 * The inbox as the CreateInboxMessages migration creates it on `db`. On SQL Server the migration
 * makes the primary key NONCLUSTERED and `CX_<table>_received_at` the CLUSTERED index (with
 * OPTIMIZE_FOR_SEQUENTIAL_KEY on 2019+): TypeORM cannot say CLUSTERED / NONCLUSTERED, it reads
 * neither back, so its schema builder leaves them as they are; `synchronize` alone would create
 * a clustered primary key and a nonclustered `CX_` index instead.
 */
export function inboxMessageEntity(
  db: DialectName,
  table: string,
  schema?: string,
): EntitySchema<InboxMessage> {
  const t = columnTypes(db);
  const primary = { primary: true, ...namedPrimaryKey(db, table) };
  return new EntitySchema<InboxMessage>({
    name: 'InboxMessage',
    ...entityTable(db, table, schema),
    columns: {
      consumer: { ...t.key(200), ...primary },
      messageId: { ...t.key(255), name: 'message_id', ...primary },
      status: t.ascii(16),
      attempts: t.int(),
      receivedAt: { ...t.time(), name: 'received_at' },
      processedAt: { ...t.time(true), name: 'processed_at' },
      lastError: { ...t.text({ mssql: 4000, mysql: 'text' }), name: 'last_error' },
    },
    indices: [
      {
        name: constraintName(db, db === 'mssql' ? 'cx' : 'ix')(table, 'received_at'),
        columns: ['receivedAt'],
      },
    ],
    checks: [
      {
        name: constraintName(db, 'ck')(table, 'status'),
        expression: `status IN ('processed', 'retrying', 'failed')`,
      },
    ],
  });
}
