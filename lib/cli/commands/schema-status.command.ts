import { createDialect, dialectNameOf } from '../../persistence/dialects';
import { getIdempotencyEntities } from '../../persistence/entities';
import { missingIndexes } from '../../persistence/schema-index.check';
import { schemaDifferences } from '../../persistence/schema-version.check';
import type { CliCommand } from '../cli-command';
import { SCHEMA_CURRENT, SCHEMA_DIFFERS } from '../cli.messages';
import { connect, parseUrlArgs, tableNames, URL_USAGE } from '../schema-target';

/**
 * `schema status`: the check the module runs at boot (every table and column the library uses,
 * every library migration recorded once any is), as an exit code for a deploy pipeline.
 */
export const schemaStatusCommand: CliCommand = {
  name: 'schema status',
  usage: `schema status --url URL [options]
  Exits 0 when the database is at this version's schema, 1 and lists what differs (missing
  tables, columns, indexes, migrations not applied) when it is not; 2 when it cannot tell.
${URL_USAGE}`,
  async run(args) {
    const { url, naming } = parseUrlArgs(args);
    // The library's entities (for this database) describe its indexes: read, never synchronized.
    let entities: ReturnType<typeof getIdempotencyEntities> = [];
    const dataSource = await connect(url, (options) => {
      entities = getIdempotencyEntities({ type: options.type }, naming);
      return { migrationsTableName: naming.migrationsTable, entities, synchronize: false };
    });
    try {
      const dialect = await createDialect(dataSource, {
        schema: naming.schema,
        tables: tableNames(naming),
      });
      const { problems, notApplied } = await schemaDifferences(dataSource, dialect.tables, naming);
      const lines = [
        ...problems,
        ...(await missingIndexes(dataSource, entities)),
        ...notApplied.map((name) => `migration not applied: ${name}`),
      ];
      if (lines.length === 0) {
        process.stdout.write(`${SCHEMA_CURRENT(dialectNameOf(dataSource.options.type))}\n`);
        return 0;
      }
      process.stdout.write(`${SCHEMA_DIFFERS(lines)}\n`);
      return 1;
    } finally {
      await dataSource.destroy();
    }
  },
};
