import { getIdempotencyMigrations } from '../../persistence/migrations';
import type { CliCommand } from '../cli-command';
import { MIGRATIONS_APPLIED } from '../cli.messages';
import { connect, parseUrlArgs, URL_USAGE } from '../schema-target';

/** `schema migrate`: runs the library's TypeORM migrations that the database does not record. */
export const schemaMigrateCommand: CliCommand = {
  name: 'schema migrate',
  usage: `schema migrate --url URL [options]
  Applies the library's TypeORM migrations the migrations table does not record, all in one
  transaction where the database allows it (SQL Server, PostgreSQL, SQLite; MySQL and MariaDB
  commit each DDL statement). Creates the --schema when it is missing.
${URL_USAGE}`,
  async run(args) {
    const { url, naming } = parseUrlArgs(args);
    const dataSource = await connect(url, {
      migrations: getIdempotencyMigrations(naming),
      migrationsTableName: naming.migrationsTable,
      migrationsTransactionMode: 'all',
    });
    try {
      if (naming.schema && ['postgres', 'mssql'].includes(dataSource.options.type)) {
        const runner = dataSource.createQueryRunner();
        try {
          await runner.createSchema(naming.schema, true);
        } finally {
          await runner.release();
        }
      }
      const applied = await dataSource.runMigrations({ transaction: 'all' });
      process.stdout.write(`${MIGRATIONS_APPLIED(applied.map((m) => m.name))}\n`);
      return 0;
    } finally {
      await dataSource.destroy();
    }
  },
};
