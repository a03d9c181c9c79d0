import type { DataSourceOptions } from 'typeorm';
import { getIdempotencyEntities, getIdempotencyMigrations } from 'nestjs-exactly-once';
import { entities, migrations } from './schema'; // your entities and migrations

export const databaseOptions: DataSourceOptions = {
  type: 'postgres',
  url: process.env.DATABASE_URL, // postgres://user:password@host:5432/database
  entities: [...getIdempotencyEntities({ type: 'postgres' }), ...entities],
  migrations: [...getIdempotencyMigrations(), ...migrations],
};
