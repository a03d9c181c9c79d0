import { EntitySchema } from 'typeorm';
import type { EntitySchemaIndexOptions } from 'typeorm';
import type { DialectName, OutboxRow } from '../dialects';
import { columnTypes, constraintName, entityTable, identityKeyName } from './column-types';

/**
 * A row of the outbox: one message, from the business transaction that wrote it to its publication
 * (as the dialects read it; the table's `next_attempt_at` is never null).
 */
export type OutboxRecord = Omit<OutboxRow, 'nextAttemptAt'> & { nextAttemptAt: Date };

/**
 * The indexes of the CreateOutboxMessages and AddOutboxDeadIndex migrations on `db`. TypeORM
 * matches indexes by name, unique flag and columns (not by their WHERE predicate); the predicates
 * are spelled as in the migrations so that `synchronize` alone creates the same partial indexes.
 */
function outboxIndices(db: DialectName, table: string): EntitySchemaIndexOptions[] {
  const ix = (suffix: string) => constraintName(db, 'ix')(table, suffix);
  const pending = `status = 'pending'`;
  if (db === 'mysql') {
    // No partial indexes on MySQL/MariaDB: the status leads instead.
    return [
      { name: ix('status_seq'), columns: ['status', 'seq'] },
      { name: ix('key_status_seq'), columns: ['partitionKey', 'status', 'seq'] },
      { name: ix('status_sent_at'), columns: ['status', 'sentAt'] },
    ];
  }
  return [
    ...(db === 'mssql'
      ? [{ name: constraintName(db, 'ux')(table, 'id'), columns: ['id'], unique: true }]
      : []),
    {
      name: ix('pending'),
      columns: ['seq'],
      where: pending,
      // SQL Server: the migration's index also INCLUDEs (next_attempt_at, locked_until,
      // partition_key). TypeORM cannot declare INCLUDE columns and reads them back as key
      // columns, so it would drop and recreate the index without them: not synchronized.
      ...(db === 'mssql' ? { synchronize: false } : {}),
    },
    { name: ix('pending_key'), columns: ['partitionKey', 'seq'], where: pending },
    { name: ix('sent_at'), columns: ['sentAt'], where: `status = 'sent'` },
    { name: ix('dead'), columns: ['seq'], where: `status = 'dead'` },
  ];
}

/**
 * The outbox as the library's migrations create it on `db`. Not expressible here, and left
 * alone by TypeORM's schema builder: PostgreSQL's `fillfactor = 85` (a table storage parameter
 * TypeORM neither reads nor writes), SQL Server's OPTIMIZE_FOR_SEQUENTIAL_KEY on the clustered
 * primary key, and the INCLUDE columns of its `IX_<table>_pending`.
 */
export function outboxRecordEntity(
  db: DialectName,
  table: string,
  schema?: string,
): EntitySchema<OutboxRecord> {
  const t = columnTypes(db);
  const pk = identityKeyName(db, table);
  return new EntitySchema<OutboxRecord>({
    name: 'OutboxRecord',
    ...entityTable(db, table, schema),
    columns: {
      seq: t.id(pk),
      id: t.key(128, { ascii: true }),
      type: t.key(255, { ascii: true }),
      payload: t.text({ nullable: false, mysql: 'longtext' }),
      headers: t.text({ mysql: 'mediumtext' }),
      partitionKey: { ...t.key(255, { nullable: true }), name: 'partition_key' },
      status: t.ascii(16),
      attempts: t.int(),
      nextAttemptAt: { ...t.time(), name: 'next_attempt_at' },
      lastError: { ...t.text({ mssql: 2000, mysql: 'text' }), name: 'last_error' },
      leaseOwner: {
        ...(db === 'mysql' ? t.key(128, { ascii: true, nullable: true }) : t.ascii(128, true)),
        name: 'lease_owner',
      },
      lockedUntil: { ...t.time(true), name: 'locked_until' },
      createdAt: { ...t.time(), name: 'created_at' },
      sentAt: { ...t.time(true), name: 'sent_at' },
      failures: t.text({ mysql: 'mediumtext' }),
      failedAt: { ...t.time(true), name: 'failed_at' },
      route: t.ascii(64, true),
    },
    // SQL Server: a UNIQUE index (not a constraint), as the migration creates it.
    uniques:
      db === 'mssql' ? [] : [{ name: constraintName(db, 'ux')(table, 'id'), columns: ['id'] }],
    indices: outboxIndices(db, table),
    checks: [
      {
        name: constraintName(db, 'ck')(table, 'status'),
        expression: `status IN ('pending', 'sent', 'dead')`,
      },
    ],
  });
}
