import { EntitySchema } from 'typeorm';
import type { DialectName } from '../dialects';
import { entityTable, namedPrimaryKey } from './column-types';

/** A key-lock slot of the outbox (see OutboxSql.lockKeySlots). */
export interface OutboxKeyLock {
  slot: number;
  n: string;
}

/**
 * The outbox's key-lock slots (`<outbox>_key_locks`) as the CreateOutboxKeyLocks migration
 * creates them on `db`. `synchronize` creates the table empty; the library fills in its slots at
 * boot (DatabaseService), as the migration does.
 */
export function outboxKeyLockEntity(
  db: DialectName,
  table: string,
  schema?: string,
): EntitySchema<OutboxKeyLock> {
  return new EntitySchema<OutboxKeyLock>({
    name: 'OutboxKeyLock',
    ...entityTable(db, table, schema),
    columns: {
      slot: {
        type: db === 'sqlite' ? 'integer' : 'int',
        primary: true,
        ...namedPrimaryKey(db, table),
      },
      n: { type: 'bigint' },
    },
  });
}
