import { DynamicModule, Module, type Provider } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { getIdempotencyEntities, getIdempotencyMigrations, IdempotencyModule } from '../../lib';
import type { OutboxOptions } from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';

/** TypeORM on DB_URL (library migrations), nestjs-cls transactions, the IdempotencyModule outbox. */
@Module({})
export class RelayBenchModule {
  static register(dbUrl: string, outbox: OutboxOptions, providers: Provider[] = []): DynamicModule {
    const db = databaseOptionsFromUrl(dbUrl) as any;
    return {
      module: RelayBenchModule,
      providers,
      imports: [
        TypeOrmModule.forRoot({
          ...db,
          entities: getIdempotencyEntities({ type: db.type }),
          migrations: getIdempotencyMigrations(),
          migrationsRun: true,
          synchronize: false,
          logging: false,
        }),
        ClsModule.forRoot({
          global: true,
          plugins: [
            new ClsPluginTransactional({
              adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
            }),
          ],
        }),
        IdempotencyModule.forRoot({ logger: false, outbox, cleanup: { enabled: false } }),
      ],
    };
  }
}
