import type { DataSourceOptions } from 'typeorm';
import { getIdempotencyEntities, getIdempotencyMigrations } from 'nestjs-exactly-once';
import { entities, migrations } from './schema'; // your entities and migrations

export const databaseOptions: DataSourceOptions = {
  type: 'better-sqlite3',
  database: process.env.DATABASE_FILE ?? 'app.sqlite',
  enableWAL: true,
  entities: [...getIdempotencyEntities({ type: 'better-sqlite3' }), ...entities],
  migrations: [...getIdempotencyMigrations(), ...migrations],
};
