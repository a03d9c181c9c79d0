import type { DataSourceOptions } from 'typeorm';
import { withExactlyOnce } from 'nestjs-exactly-once';
import { entities, migrations } from './schema'; // your entities and migrations

// withExactlyOnce adds the library's entities (for this `type`) and migrations.
export const databaseOptions: DataSourceOptions = withExactlyOnce({
  type: 'better-sqlite3',
  database: process.env.DATABASE_FILE ?? 'app.sqlite',
  enableWAL: true,
  entities,
  migrations,
});
