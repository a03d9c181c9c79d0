import { DynamicModule, Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { createHash } from 'node:crypto';
import { getIdempotencyEntities, getIdempotencyMigrations, IdempotencyModule } from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { HealthController } from '../../sample-app/health/health.controller';
import { CreatePayments1763700001000 } from '../../sample-app/migrations/1763700001000-create-payments';
import { Payment } from '../../sample-app/payments/payment.entity';
import { BenchPaymentsController, BenchStatsController } from './bench-payments.controller';
import { BenchPaymentsService } from './bench-payments.service';
import { StatementCounter } from './statement-counter';

/**
 * The benchmark app: the sample app's wiring (TypeORM from DB_URL with the library's entities
 * and migrations, nestjs-cls with the transactional plugin, IdempotencyModule with the same
 * tenant/principal resolvers), with the sample app's payments table and a one-insert handler.
 */
@Module({})
export class BenchAppModule {
  static register(dbUrl: string): DynamicModule {
    const db = databaseOptionsFromUrl(dbUrl);
    const counter = new StatementCounter();
    return {
      module: BenchAppModule,
      imports: [
        TypeOrmModule.forRoot({
          ...db,
          entities: [Payment, ...getIdempotencyEntities({ type: db.type })],
          migrations: [...getIdempotencyMigrations(), CreatePayments1763700001000],
          migrationsRun: true,
          synchronize: false,
          logger: counter,
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
        IdempotencyModule.forRootAsync({
          useFactory: () => ({
            // No background work in the measured process: no outbox relay, no periodic cleanup.
            outbox: { relayEnabled: false },
            cleanup: { enabled: false },
            tenantResolver: (req) => header(req, 'x-tenant-id') || 'public',
            principalResolver: (req) => {
              const auth = header(req, 'authorization');
              return auth
                ? createHash('sha256').update(auth).digest('hex').slice(0, 32)
                : undefined;
            },
          }),
        }),
      ],
      controllers: [BenchPaymentsController, BenchStatsController, HealthController],
      providers: [BenchPaymentsService, { provide: StatementCounter, useValue: counter }],
    };
  }
}

function header(req: any, name: string): string | undefined {
  const v = req.headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}
