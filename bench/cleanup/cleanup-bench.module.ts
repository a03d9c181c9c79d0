import { ReplayCache } from '../../lib/persistence/replay.cache';
import { DynamicModule, Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import {
  getIdempotencyEntities,
  getIdempotencyMigrations,
  IdempotencyModule,
  MetricsService,
} from '../../lib';
import { IDEMPOTENCY_OPTIONS } from '../../lib/idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../../lib/idempotency.options';
import { DatabaseService } from '../../lib/persistence/database.service';
import { MaintenanceStore } from '../../lib/maintenance/maintenance.store';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { CreatePayments1763700001000 } from '../../sample-app/migrations/1763700001000-create-payments';
import { Payment } from '../../sample-app/payments/payment.entity';
import { PaymentsService } from '../../sample-app/payments/payments.service';
import { CleanupBenchController } from './cleanup-bench.controller';
import { CleanupStatementTimer } from './statement-timer.subscriber';
import { TimedCleanupService } from './timed-cleanup';

/**
 * The cleanup benchmark's app: the sample app's wiring and payment insert behind a guarded
 * POST, the library's own cleanup loop off (the suite drives a timed CleanupService instead).
 */
@Module({})
export class CleanupBenchModule {
  static register(dbUrl: string): DynamicModule {
    const db = databaseOptionsFromUrl(dbUrl);
    return {
      module: CleanupBenchModule,
      imports: [
        TypeOrmModule.forRoot({
          ...db,
          entities: [Payment, ...getIdempotencyEntities({ type: db.type })],
          migrations: [...getIdempotencyMigrations(), CreatePayments1763700001000],
          migrationsRun: true,
          synchronize: false,
          logging: ['error'],
          subscribers: [CleanupStatementTimer],
        } as any),
        ClsModule.forRoot({
          global: true,
          middleware: { mount: true },
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
      controllers: [CleanupBenchController],
      providers: [
        PaymentsService,
        {
          provide: TimedCleanupService,
          useFactory: (
            dbs: DatabaseService,
            metrics: MetricsService,
            options: ResolvedIdempotencyOptions,
          ) =>
            new TimedCleanupService(
              new MaintenanceStore(dbs, new ReplayCache({ replayCache: false })),
              metrics,
              options,
            ),
          inject: [DatabaseService, MetricsService, IDEMPOTENCY_OPTIONS],
        },
      ],
    };
  }
}
