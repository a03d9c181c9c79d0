import type { EntitySchema } from 'typeorm';
import { DEFAULT_OPTIONS } from '../../idempotency-options.resolver';
import { dialectNameOf, outboxKeyLocksName } from '../dialects';
import type { DialectName, TableNaming } from '../dialects';
import { TYPE_MISSING, TYPE_UNSUPPORTED } from './entities.messages';
import { idempotencyRecordEntity } from './idempotency-record.entity';
import { inboxMessageEntity } from './inbox-message.entity';
import { outboxKeyLockEntity } from './outbox-key-lock.entity';
import { outboxRecordEntity } from './outbox-record.entity';

export type { IdempotencyRecord } from './idempotency-record.entity';
export type { InboxMessage } from './inbox-message.entity';
export type { OutboxRecord } from './outbox-record.entity';

/** The schema and table names of the library's tables (as given to `IdempotencyModule.forRoot()`). */
export interface LibraryTableNaming {
  schema?: string;
  tables?: Partial<TableNaming['tables']>;
}

export interface EntityOptions extends LibraryTableNaming {
  /** The TypeORM driver type of the DataSource ('mssql', 'postgres', 'mysql', 'mariadb', 'better-sqlite3', 'sqlite'). */
  type: string;
}

/** The database each of the library's entities was built for (to tell a mix-up). @internal */
export const ENTITY_DIALECT = Symbol('nestjs-exactly-once:entity-dialect');

/** The dialect of a DataSource type, or an error that names the fix. @internal */
export function dialectOfType(type: unknown, helper: string): DialectName {
  if (type === undefined || type === null || type === '') throw new Error(TYPE_MISSING(helper));
  try {
    return dialectNameOf(String(type));
  } catch {
    throw new Error(TYPE_UNSUPPORTED(helper, type));
  }
}

const ENTITY_OPTION_KEYS = new Set(['type', 'schema', 'tables']);

/**
 * The library's TypeORM entities for a DataSource, to register next to the app's own:
 * `entities: [...getIdempotencyEntities(dataSourceOptions), ...yourEntities]`, or, for the
 * entities and the migrations at once, `withExactlyOnce(dataSourceOptions)`.
 *
 * The first argument is the DataSource options object (only its `type` is read; the library's
 * schema and table names come from `naming`), or, as before, `{ type, schema?, tables? }`.
 * The entities describe exactly the tables the library's migrations create on that database
 * (`getIdempotencyMigrations()`); run those migrations before `typeorm migration:generate`.
 */
export function getIdempotencyEntities(
  options: EntityOptions | { type?: unknown },
  naming?: LibraryTableNaming,
): EntitySchema<any>[] {
  const db = dialectOfType(options?.type, 'getIdempotencyEntities()');
  // `{ type, schema?, tables? }` (the original form) carries the naming itself; a DataSource's
  // options object does not (its own `schema` is the DataSource's default schema).
  const own = Object.keys(options).every((k) => ENTITY_OPTION_KEYS.has(k));
  const names: LibraryTableNaming = naming ?? (own ? (options as EntityOptions) : {});
  const tables = { ...DEFAULT_OPTIONS.tables, ...names.tables };
  const entities = [
    idempotencyRecordEntity(db, tables.idempotency, names.schema),
    inboxMessageEntity(db, tables.inbox, names.schema),
    outboxRecordEntity(db, tables.outbox, names.schema),
    outboxKeyLockEntity(db, outboxKeyLocksName(tables.outbox), names.schema),
  ];
  for (const entity of entities) {
    Object.defineProperty(entity, ENTITY_DIALECT, { value: db, enumerable: false });
  }
  return entities;
}
