/** Texts of the configuration errors found at boot or while a guarded handler runs. */

const RUN_MIGRATIONS =
  "Run the migrations: `npx typeorm migration:run -d <your data-source>` or set migrationsRun: true; the library's migrations are getIdempotencyMigrations().";

export const SCHEMA_NOT_MIGRATED = (problems: string[], notApplied: string[]) =>
  `IdempotencyModule: the database is not at the library's newest migration: ${[
    ...problems,
    ...(notApplied.length ? [`not applied: ${notApplied.join(', ')}`] : []),
  ].join('; ')}. ${RUN_MIGRATIONS}`;

export const TABLE_MISSING = (table: string) => `table ${table} does not exist`;

export const INDEX_MISSING = (table: string, index: string) =>
  `table ${table} lacks the index ${index}`;

export const COLUMNS_MISSING = (table: string, error: string) =>
  `table ${table} lacks columns the library needs (${error})`;

export const TRANSACTION_HOST_ELSEWHERE = (dataSource: string | undefined) =>
  `IdempotencyModule: the nestjs-cls transactional plugin runs its transactions on another DataSource than IdempotencyModule's (${dataSource ? `"${dataSource}"` : 'the default one'}). ` +
  `Give TransactionalAdapterTypeOrm the same one (dataSourceToken: getDataSourceToken(${dataSource ? `'${dataSource}'` : ''})), ` +
  'or set the dataSource / transactionConnectionName options of IdempotencyModule to the pair the plugin uses.';

const STAY_INSIDE =
  'Write through the ambient transaction: TransactionHost.tx (nestjs-cls), e.g. txHost.tx.getRepository(Entity), ' +
  'instead of an @InjectRepository() repository, dataSource.manager or dataSource.query()';

export const STRAY_WRITE_REFUSED = (kind: string, where: string) =>
  `IdempotencyModule: a write ran outside the request's transaction (${kind} during ${where}) and was refused: ` +
  `it would commit on its own even when the request rolls back, and run again on a retry. ${STAY_INSIDE}. ` +
  "To let such writes through, set strayWrites: 'warn' or 'ignore' (module option, @Idempotent({ strayWrites }), or the inbox's strayWrites).";

export const STRAY_WRITE_SEEN = (kind: string, where: string) =>
  `IdempotencyModule: a write ran outside the request's transaction (${kind} during ${where}): ` +
  `it committed on its own and is not undone if the request rolls back; a retry runs it again. ${STAY_INSIDE}. ` +
  "(strayWrites: 'warn'; logged once per handler.)";

export const RENEWAL_CONNECTION_CLOSED =
  'IdempotencyModule: the lease renewal connection is closed (the app is shutting down)';
