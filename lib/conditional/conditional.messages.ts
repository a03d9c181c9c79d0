/** Texts of errors raised by misuse (not HTTP answers). */
export const NO_VERSION_COLUMN = (entity: string) =>
  `${entity} has no version column for conditional writes: add @VersionColumn() (an integer the library increments), ` +
  `or on SQL Server a rowversion column (@RowVersionColumn() or @Column({ type: 'rowversion', insert: false, update: false })).`;
export const ROWVERSION_NOT_MSSQL = (entity: string, type: string) =>
  `${entity}: a rowversion version column needs SQL Server (mssql), but the DataSource is "${type}". Use @VersionColumn() there.`;
export const ID_MISSING = (entity: string, column: string) =>
  `${entity}: the id given to a conditional write has no value for primary-key property "${column}".`;
export const SCALAR_ID_COMPOSITE = (entity: string) =>
  `${entity} has a composite primary key: pass the id as an object of its key properties.`;
export const NOTHING_TO_UPDATE = (entity: string) =>
  `${entity}: the conditional write was given no column to change.`;
export const UPSERT_RACE = (entity: string) =>
  `${entity}: the row kept appearing and disappearing during an unconditional replace; gave up after 3 attempts.`;
export const PRECONDITIONS_IGNORED = (where: string) =>
  `${where} received If-Match / If-None-Match but answered without a conditional write or check: the request's precondition was not applied. ` +
  `Write through ConditionalWriter (it reads the preconditions of the request) or pass them on.`;
export const NO_ETAG = (where: string) =>
  `@ConditionalRead() on ${where} answered without an ETag: load the entity with ConditionalWriter.find() or call ConditionalContext.setETag().`;
