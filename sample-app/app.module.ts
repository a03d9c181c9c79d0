import { DynamicModule, Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import {
  getIdempotencyEntities,
  getIdempotencyMigrations,
  IdempotencyModule,
  type ReplayCacheStore,
} from '../lib';
import { databaseOptionsFromUrl, DEFAULT_DB_URL } from './config/database.config';
import { encryptionFromEnv } from './config/encryption.config';
import { idempotencyModeFromEnv, numberFromEnv } from './config/sample.config';
import { AuthModule } from './auth/auth.module';
import type { SampleCaller } from './auth/auth.guard';
import { OpsModule } from './ops/ops.module';
import { brokerConfigFromEnv } from './messaging/broker.config';
import { MessagingModule } from './messaging/messaging.module';
import { outboxOptionsFromEnv } from './messaging/outbox.config';
import { CreatePayments1763700001000 } from './migrations/1763700001000-create-payments';
import { CreateCustomers1763700007000 } from './migrations/1763700007000-create-customers';
import { customerEntity } from './customers/customer.entity';
import { CustomersController } from './customers/customers.controller';
import { CustomersService } from './customers/customers.service';
import { Payment } from './payments/payment.entity';
import { PaymentsController } from './payments/payments.controller';
import { PaymentsRpcController } from './payments/payments.rpc-controller';
import { PaymentsResolver } from './payments/payments.resolver';
import { graphqlModuleFor } from './graphql/graphql.config';
import { PaymentsService } from './payments/payments.service';
import { LedgerEntry } from './ledger/ledger-entry.entity';
import { LedgerModule } from './ledger/ledger.module';
import { CreateLedgerEntries1763700009000 } from './migrations/1763700009000-create-ledger-entries';
import { CreateNotifications1763700011000 } from './migrations/1763700011000-create-notifications';
import { AddLedgerEntryPosition1763700013000 } from './migrations/1763700013000-add-ledger-entry-position';
import { Notification } from './notifications/notification.entity';
import { NotificationsModule } from './notifications/notifications.module';
import {
  REPLAY_CACHE_STORE,
  ReplayCacheRedisModule,
} from './replay-cache/replay-cache-redis.module';

export interface SampleAppConfig {
  dbUrl?: string;
  /** Which GraphQL driver serves `POST /graphql`: Apollo (express) or Mercurius (fastify). */
  platform?: 'express' | 'fastify';
}

@Module({})
export class AppModule {
  static register(config: SampleAppConfig = {}): DynamicModule {
    const db = databaseOptionsFromUrl(config.dbUrl ?? process.env.DB_URL ?? DEFAULT_DB_URL);
    const platform =
      config.platform ?? (process.env.HTTP_PLATFORM === 'fastify' ? 'fastify' : 'express');
    const broker = brokerConfigFromEnv();
    const graphql = graphqlModuleFor(platform);
    return {
      module: AppModule,
      imports: [
        TypeOrmModule.forRoot({
          ...db,
          entities: [
            Payment,
            LedgerEntry,
            Notification,
            customerEntity(db.type),
            ...getIdempotencyEntities({ type: db.type }),
          ],
          migrations: [
            ...getIdempotencyMigrations(),
            CreatePayments1763700001000,
            CreateCustomers1763700007000,
            CreateLedgerEntries1763700009000,
            CreateNotifications1763700011000,
            AddLedgerEntryPosition1763700013000,
          ],
          migrationsRun: true,
          synchronize: false,
          // The gate's expected failures (a duplicate's lock timeout, a duplicate key) are answers,
          // not errors, so TypeORM's query log is off. DB_LOG_QUERIES=true turns it on for
          // debugging; it prints statement parameters, raw idempotency keys included.
          logging: process.env.DB_LOG_QUERIES === 'true' ? ['query', 'error'] : false,
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
          // REPLAY_CACHE_REDIS_URL: the replay cache's shared tier on Redis (unset: memory only).
          imports: [ReplayCacheRedisModule],
          inject: [REPLAY_CACHE_STORE],
          useFactory: (replayCacheStore?: ReplayCacheStore) => ({
            // Read here, when the module is registered (not when a controller file is imported).
            mode: idempotencyModeFromEnv(),
            leaseMs: numberFromEnv('IDEMPOTENCY_LEASE_MS'),
            ttl: numberFromEnv('IDEMPOTENCY_TTL_MS'),
            // The relay publishes through the OutboxPublisher of MessagingModule (BROKER_URL); with
            // no BROKER_URL that is the in-process publisher, which runs the @OnOutboxMessage()
            // handlers of LedgerModule and NotificationsModule.
            outbox: outboxOptionsFromEnv(),
            // The ledger consumer's inbox: failed attempts of one message before it is recorded as
            // failed, and the growing delay between them (INBOX_BACKOFF_BASE_MS · 2^(n-1), capped).
            inbox: {
              maxAttempts: numberFromEnv('INBOX_MAX_ATTEMPTS'),
              backoffBaseMs: numberFromEnv('INBOX_BACKOFF_BASE_MS'),
              backoffMaxMs: numberFromEnv('INBOX_BACKOFF_MAX_MS'),
            },
            // Retention and cleanup (set them to seconds to watch cleanup work), health thresholds.
            cleanup: {
              intervalMs: numberFromEnv('CLEANUP_INTERVAL_MS'),
              outboxRetentionMs: numberFromEnv('OUTBOX_RETENTION_MS'),
              inboxRetentionMs: numberFromEnv('INBOX_RETENTION_MS'),
            },
            health: {
              maxPendingAgeMs: numberFromEnv('HEALTH_MAX_PENDING_AGE_MS'),
              relayHeartbeatTimeoutMs: numberFromEnv('HEALTH_RELAY_TIMEOUT_MS'),
              maxDeadLetters: numberFromEnv('HEALTH_MAX_DEAD_LETTERS'),
            },
            // Stored answers sealed with AES-256-GCM under a key ring: IDEMPOTENCY_ENCRYPTION_KEYS
            // ("id:base64,id:base64", the first encrypts), or IDEMPOTENCY_ENCRYPTION_KEY (one key).
            ...encryptionFromEnv(),
            replayCache: replayCacheStore ? { store: replayCacheStore } : undefined,
            // The tenant comes from X-Tenant-Id; the principal is who is calling: the subject
            // SampleAuthGuard put on the request (a token's user, an API key's client), so a
            // retry after a token refresh stays in the same scope.
            tenantResolver: (req) => header(req, 'x-tenant-id') || 'public',
            principalResolver: (req) => (req.user as SampleCaller | undefined)?.subject,
          }),
        }),
        AuthModule,
        OpsModule,
        MessagingModule.forRoot(broker),
        LedgerModule.forRoot(broker),
        NotificationsModule.forRoot(broker),
        // POST /graphql: mutation createPayment, guarded like POST /payments (on Fastify only
        // with GRAPHQL_ON_FASTIFY=true: graphql.config.ts says why).
        ...(graphql ? [graphql] : []),
      ],
      controllers: [PaymentsController, PaymentsRpcController, CustomersController],
      providers: [PaymentsService, CustomersService, ...(graphql ? [PaymentsResolver] : [])],
    };
  }
}

function header(req: any, name: string): string | undefined {
  const v = req.headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}
