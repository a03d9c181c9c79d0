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

export const CONNECTION_URL_MISSING = (type: string, url: unknown, example: string) =>
  `nestjs-exactly-once: withExactlyOnce() got ${type} options with url ${url === '' ? "''" : String(url)} ` +
  `and no host, so there is nothing to connect to: is the environment variable it is read from ` +
  `(e.g. DATABASE_URL) set? Set it to ${example}, or pass host, port, username, password and database.`;

export const CONNECTION_HOST_MISSING = (type: string) =>
  `nestjs-exactly-once: withExactlyOnce() got ${type} options with an empty host and no url, so ` +
  `there is nothing to connect to: is the environment variable it is read from (e.g. DB_HOST) set?`;

export const CONNECTION_DATABASE_MISSING = (type: string) =>
  `nestjs-exactly-once: withExactlyOnce() got ${type} options without a database file: is the ` +
  `environment variable it is read from (e.g. DATABASE_FILE) set? Pass database: 'app.sqlite' ` +
  `(a path) or ':memory:'.`;

export const CONNECTION_URL_INVALID = (type: string, scheme: string, expected: string[]) =>
  `nestjs-exactly-once: withExactlyOnce() got a ${type} url starting with "${scheme}" instead of ` +
  `${expected.map((e) => `${e}//`).join(' or ')}: the URL is for another database, or the ` +
  `DataSource type is wrong. Use ${expected[0]}//user:password@host:port/database with type '${type}'.`;
