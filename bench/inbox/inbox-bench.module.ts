import { DynamicModule, Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { EntitySchema, MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { getIdempotencyEntities, getIdempotencyMigrations, IdempotencyModule } from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { InboxBenchController } from './inbox-bench.controller';

/** The row the benchmarked handler inserts: one per message. */
export interface BenchEffect {
  id: string;
  messageId: string;
  note: string;
}

export const BenchEffectEntity = new EntitySchema<BenchEffect>({
  name: 'BenchEffect',
  tableName: 'bench_effects',
  columns: {
    id: { type: 'varchar', length: 36, primary: true },
    messageId: { name: 'message_id', type: 'varchar', length: 255 },
    note: { type: 'varchar', length: 64 },
  },
});

export class CreateBenchEffects1763709990000 implements MigrationInterface {
  name = 'CreateBenchEffects1763709990000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'bench_effects',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'message_id', type: 'varchar', length: '255' },
          { name: 'note', type: 'varchar', length: '64' },
        ],
      }),
    );
    await queryRunner.createIndex(
      'bench_effects',
      new TableIndex({ name: 'ix_bench_effects_message', columnNames: ['message_id'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('bench_effects');
  }
}

/** The inbox benchmark's app: TypeORM on DB_URL, nestjs-cls transactions, the library (relay and cleanup off). */
@Module({})
export class InboxBenchModule {
  static register(dbUrl: string): DynamicModule {
    const db = databaseOptionsFromUrl(dbUrl);
    return {
      module: InboxBenchModule,
      imports: [
        TypeOrmModule.forRoot({
          ...db,
          entities: [BenchEffectEntity, ...getIdempotencyEntities({ type: db.type })],
          migrations: [...getIdempotencyMigrations(), CreateBenchEffects1763709990000],
          migrationsRun: true,
          synchronize: false,
          logging: ['error'],
        } as any),
        ClsModule.forRoot({
          global: true,
          plugins: [
            new ClsPluginTransactional({
              adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
            }),
          ],
        }),
        IdempotencyModule.forRoot({
          cleanup: { enabled: false },
          outbox: { relayEnabled: false },
          logger: false,
        }),
      ],
      controllers: [InboxBenchController],
    };
  }
}
