import type { DataSourceOptions } from 'typeorm';
import { getIdempotencyMigrations } from '../migrations';
import { checkConnectionOptions } from './connection-options.check';
import { ENTITIES_OF_ANOTHER_DATABASE } from './entities.messages';
import { dialectOfType, ENTITY_DIALECT, getIdempotencyEntities } from './index';
import type { LibraryTableNaming } from './index';

/** Options of `withExactlyOnce()`: the same schema and table names as `IdempotencyModule.forRoot()`. */
export type ExactlyOnceDataSourceOptions = LibraryTableNaming;

type MixedList<T> = T[] | { [key: string]: T };
const listOf = <T>(list: MixedList<T> | undefined): T[] =>
  list === undefined ? [] : Array.isArray(list) ? list : Object.values(list);

/**
 * The DataSource options with the library's entities (for the options' own `type`) and its
 * migrations appended; everything else is returned as given.
 *
 * ```ts
 * TypeOrmModule.forRoot(withExactlyOnce({ type: 'postgres', url, entities: [Order], migrations: [...] }))
 * // data-source.ts, for the TypeORM CLI (migration:run / migration:generate)
 * export default new DataSource(withExactlyOnce({ type: 'postgres', url, entities: [Order] }))
 * ```
 *
 * Connection options that cannot work are refused with a message naming the fix: a `url` read
 * from an unset environment variable (and no host), a URL of another database.
 *
 * Library entities and migrations already listed (`getIdempotencyEntities()`,
 * `getIdempotencyMigrations()`) are replaced; library entities built for another database type
 * are an error. Run the library's migrations before `typeorm migration:generate`: the entities
 * describe exactly the tables they create.
 */
export function withExactlyOnce<T extends Partial<DataSourceOptions>>(
  dataSourceOptions: T,
  libraryOptions: ExactlyOnceDataSourceOptions = {},
): T {
  const db = dialectOfType(dataSourceOptions?.type, 'withExactlyOnce()');
  checkConnectionOptions(db, dataSourceOptions as Record<string, unknown>);
  const entities = listOf<unknown>(dataSourceOptions.entities as MixedList<unknown>);
  const ours = (e: unknown): string | undefined =>
    typeof e === 'object' && e !== null ? (e as Record<symbol, string>)[ENTITY_DIALECT] : undefined;
  const foreign = entities.map(ours).find((d) => d !== undefined && d !== db);
  if (foreign) {
    throw new Error(ENTITIES_OF_ANOTHER_DATABASE(String(dataSourceOptions.type), foreign));
  }
  const migrations = getIdempotencyMigrations(libraryOptions);
  // The library's migrations already listed (`...getIdempotencyMigrations()`) are replaced.
  const libraryMigrations = new Set(migrations.map((m) => m.name));
  return {
    ...dataSourceOptions,
    entities: [
      ...entities.filter((e) => ours(e) === undefined),
      ...getIdempotencyEntities({ type: dataSourceOptions.type }, libraryOptions),
    ],
    migrations: [
      ...listOf<unknown>(dataSourceOptions.migrations as MixedList<unknown>).filter(
        (m) => typeof m !== 'function' || !libraryMigrations.has(m.name),
      ),
      ...migrations,
    ],
  } as T;
}
