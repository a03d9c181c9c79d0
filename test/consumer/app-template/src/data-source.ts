import { DataSource } from 'typeorm';
import { databaseOptions } from './database';

// For the TypeORM CLI: npx typeorm migration:run -d dist/data-source.js
export default new DataSource(databaseOptions);
