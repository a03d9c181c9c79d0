import type { DataSource, EntitySchema } from 'typeorm';
import { INDEX_MISSING } from './persistence.messages';

/**
 * The indexes and unique constraints the library's entities declare (the migrations' own, kept
 * equal by test/integration/schema-drift.spec.ts) that a table lacks, read from the catalog
 * through TypeORM's schema reader: what `schema status` adds to the boot check (which does not
 * read the catalog, to keep boot fast). Tables that do not exist are the boot check's to report.
 * Names compare case-insensitively; Babelfish keeps an index name lower-cased, cut to 31
 * characters and followed by a hash, so there a prefix of 31 characters matches.
 */
export async function missingIndexes(
  dataSource: DataSource,
  entities: ReadonlyArray<EntitySchema<any>>,
): Promise<string[]> {
  const problems: string[] = [];
  const runner = dataSource.createQueryRunner();
  try {
    for (const entity of entities) {
      const metadata = dataSource.getMetadata(entity);
      const table = await runner.getTable(metadata.tablePath);
      if (!table) continue;
      const present = [...table.indices, ...table.uniques]
        .map((i) => i.name?.toLowerCase())
        .filter((n): n is string => !!n);
      const expected = [...metadata.indices, ...metadata.uniques]
        .map((i) => i.name)
        .filter((n): n is string => !!n);
      for (const name of expected) {
        const want = name.toLowerCase();
        const found = present.some((p) => p === want || p.startsWith(want.slice(0, 31)));
        if (!found) problems.push(INDEX_MISSING(metadata.tablePath, name));
      }
    }
  } finally {
    await runner.release();
  }
  return problems;
}
