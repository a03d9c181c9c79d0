/** Texts of the errors of the entity and DataSource helpers. */

const SUPPORTED = `mssql, postgres, mysql, mariadb, better-sqlite3 or sqlite`;

export const TYPE_MISSING = (helper: string) =>
  `nestjs-exactly-once: ${helper} needs the DataSource type (${SUPPORTED}). Pass the DataSource ` +
  `options themselves: TypeOrmModule.forRoot(withExactlyOnce({ type: 'postgres', ... })), so that ` +
  `the library's entities and migrations follow the DataSource's type.`;

export const TYPE_UNSUPPORTED = (helper: string, type: unknown) =>
  `nestjs-exactly-once: ${helper} got the DataSource type "${String(type)}"; the library's tables ` +
  `exist for ${SUPPORTED} only. Use one of those DataSource types.`;

export const ENTITIES_OF_ANOTHER_DATABASE = (type: string, found: string) =>
  `nestjs-exactly-once: the entities of this ${type} DataSource include the library's entities ` +
  `built for ${found} (getIdempotencyEntities({ type: '${found}' })). Remove them: ` +
  `withExactlyOnce() adds the library's entities for the DataSource's own type.`;
