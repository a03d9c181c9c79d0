import type { EntitySchema } from 'typeorm';
import { DEFAULT_OPTIONS } from '../../idempotency.options';
import { dialectNameOf } from '../dialects';
import type { TableNaming } from '../dialects';
import { idempotencyRecordEntity } from './idempotency-record.entity';
import { inboxMessageEntity } from './inbox-message.entity';
import { outboxRecordEntity } from './outbox-record.entity';

export type { IdempotencyRecord } from './idempotency-record.entity';
export type { InboxMessage } from './inbox-message.entity';
export type { OutboxRecord } from './outbox-record.entity';

export interface EntityOptions {
  /** The TypeORM driver type of the DataSource ('mssql', 'postgres', 'mysql', 'mariadb', 'better-sqlite3'). */
  type: string;
  schema?: string;
  tables?: Partial<TableNaming['tables']>;
}

/**
 * The library's TypeORM entities, typed for the given database, to register next to the app's
 * own (`entities: [...getIdempotencyEntities({ type: 'mssql' }), ...]`). The schema itself is
 * created by the migrations (`getIdempotencyMigrations()`), not by `synchronize`.
 */
export function getIdempotencyEntities(options: EntityOptions): EntitySchema<any>[] {
  const db = dialectNameOf(options.type);
  const tables = { ...DEFAULT_OPTIONS.tables, ...options.tables };
  return [
    idempotencyRecordEntity(db, tables.idempotency, options.schema),
    inboxMessageEntity(db, tables.inbox, options.schema),
    outboxRecordEntity(db, tables.outbox, options.schema),
  ];
}
