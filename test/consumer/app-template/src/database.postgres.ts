import type { DataSourceOptions } from 'typeorm';
import { withExactlyOnce } from 'nestjs-exactly-once';
import { entities, migrations } from './schema'; // your entities and migrations

// withExactlyOnce adds the library's entities (for this `type`) and migrations.
export const databaseOptions: DataSourceOptions = withExactlyOnce({
  type: 'postgres',
  url: process.env.DATABASE_URL, // postgres://user:password@host:5432/database
  entities,
  migrations,
});
