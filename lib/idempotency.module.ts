import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { IdempotencyOptionsError } from './errors/idempotency-options.error';
import { IDEMPOTENCY_OPTIONS, IDEMPOTENCY_RAW_OPTIONS } from './idempotency.constants';
import type {
  IdempotencyModuleAsyncOptions,
  IdempotencyModuleForRootOptions,
} from './idempotency-module.interfaces';
import {
  ConfigurableIdempotencyModule,
  FORROOTASYNC_NEEDS_FACTORY,
} from './idempotency.module-definition';

import type { IdempotencyModuleOptions } from './idempotency.options';
import { resolveOptions } from './idempotency-options.resolver';
import { IdempotencyContext } from './gate/idempotency-context';
import { IdempotencyExceptionFilter } from './gate/idempotency-exception.filter';
import { IdempotencyInterceptor } from './gate/idempotency.interceptor';
import { ConditionalContext } from './conditional/conditional-context';
import { ConditionalWriter } from './conditional/conditional-writer.service';
import { ConditionalInterceptor } from './conditional/conditional.interceptor';
import { CallGate } from './gate/call-gate';
import { ExactlyOnceEvents } from './events/exactly-once.events';
import { IdempotentRoutesExplorer } from './gate/idempotent-routes.explorer';
import { DiscoveredMethods } from './internal/instance-methods';
import { RpcIdempotencyInterceptor } from './rpc/rpc-idempotency.interceptor';
import { GraphqlIdempotencyInterceptor } from './graphql/graphql-idempotency.interceptor';
import { IdempotentResolversExplorer } from './graphql/idempotent-resolvers.explorer';
import { InboxInterceptor } from './inbox/inbox.interceptor';
import { InboxService } from './inbox/inbox.service';
import { IdempotencyAdminService } from './maintenance/admin.service';
import { CleanupService } from './maintenance/cleanup.service';
import { IdempotencyHealthIndicator } from './maintenance/health.indicator';
import { MetricsService } from './observability/metrics.service';
import { OutboxGaugesObserver } from './maintenance/outbox-gauges.observer';
import { OutboxAdminService } from './outbox/outbox-admin.service';
import { OutboxPublisherCheck } from './outbox/outbox-publisher.check';
import { OutboxRelay } from './outbox/outbox-relay.service';
import { OutboxHandlersExplorer } from './outbox/handlers/outbox-handlers.explorer';
import { OutboxHandlersRegistry } from './outbox/handlers/outbox-handlers.registry';
import { OutboxService } from './outbox/outbox.service';
import { OutboxWakeSignal } from './outbox/outbox-wake.signal';
import { ConditionalStore } from './conditional/conditional.store';
import { InboxStore } from './inbox/inbox.store';
import { RmqDeliveryAcknowledger } from './inbox/rmq-delivery.acknowledger';
import { InboxDeliveries } from './inbox/inbox-deliveries.registry';
import { InboxRetryTimers } from './inbox/inbox-retry.timers';
import { KafkaOffsetCommitter } from './inbox/kafka-offset.committer';
import { RmqServerWatcher } from './inbox/rmq-server.watcher';
import { MaintenanceStore } from './maintenance/maintenance.store';
import { OutboxStore } from './outbox/outbox.store';
import { DatabaseService } from './persistence/database.service';
import { IdempotencyLedger } from './persistence/idempotency-ledger';
import { ReplayCache } from './persistence/replay.cache';
import { ProblemDetailsInstaller } from './problem-details/problem-details.installer';

/**
 * Providers the app reaches: its services, the services their subclasses take, and the
 * interceptors and filter that the decorators (`@Idempotent()`, `@IdempotentConsumer()`,
 * `@ConditionalUpdate()`) resolve in the controller's module. The module exports exactly these.
 */
const PUBLIC_PROVIDERS = [
  DatabaseService,
  MetricsService,
  CleanupService,
  IdempotencyHealthIndicator,
  IdempotencyAdminService,
  IdempotencyInterceptor,
  IdempotencyExceptionFilter,
  IdempotencyContext,
  ConditionalWriter,
  ConditionalInterceptor,
  ConditionalContext,
  InboxService,
  InboxInterceptor,
  OutboxService,
  OutboxRelay,
  OutboxAdminService,
  ExactlyOnceEvents,
  OutboxHandlersRegistry,
];

/** The library's own machinery (`@internal`): wired here, never exported. */
const INTERNAL_PROVIDERS = [
  IdempotencyLedger,
  ReplayCache,
  OutboxGaugesObserver,
  DiscoveredMethods,
  IdempotentRoutesExplorer,
  IdempotentResolversExplorer,
  OutboxWakeSignal,
  OutboxPublisherCheck,
  OutboxHandlersExplorer,
  // Each feature's way to SQL (internal).
  OutboxStore,
  InboxStore,
  RmqDeliveryAcknowledger,
  InboxRetryTimers,
  InboxDeliveries,
  KafkaOffsetCommitter,
  RmqServerWatcher,
  MaintenanceStore,
  ConditionalStore,
  // The app's problem+json filter of last resort (`problemDetailsFilter`).
  ProblemDetailsInstaller,
];

/**
 * Internal, yet exported from the module: the context adapters that `@Idempotent()`'s interceptor
 * (created in the app's modules) hands non-HTTP calls to.
 */
const ADAPTER_PROVIDERS = [CallGate, RpcIdempotencyInterceptor, GraphqlIdempotencyInterceptor];

/** Providers of every feature, wired once for forRoot and forRootAsync. */
const FEATURE_PROVIDERS: Provider[] = [
  ...PUBLIC_PROVIDERS,
  ...INTERNAL_PROVIDERS,
  ...ADAPTER_PROVIDERS,
];

const EXPORTS = [IDEMPOTENCY_OPTIONS, ...PUBLIC_PROVIDERS, ...ADAPTER_PROVIDERS];

const optionsProvider: Provider = {
  provide: IDEMPOTENCY_OPTIONS,
  useFactory: (raw: IdempotencyModuleOptions) => resolveOptions(raw),
  inject: [IDEMPOTENCY_RAW_OPTIONS],
};

/** Adds the library's providers to a definition of the builder. */
function withFeatures(definition: DynamicModule): DynamicModule {
  return {
    ...definition,
    imports: [DiscoveryModule, ...(definition.imports ?? [])],
    providers: [...(definition.providers ?? []), optionsProvider, ...FEATURE_PROVIDERS],
    exports: EXPORTS,
  };
}

/**
 * Exactly-once effects for a Nest app: the HTTP idempotency gate (`@Idempotent()`), the
 * transactional outbox and relay, the inbox and maintenance, on the app's TypeORM DataSource
 * and nestjs-cls ambient transactions. Global (unless `isGlobal: false`): import it once in the
 * root module. Defined by `ConfigurableModuleBuilder` (idempotency.module-definition.ts).
 */
@Module({})
export class IdempotencyModule extends ConfigurableIdempotencyModule {
  /** Registers the module with options given now (every option has a default). */
  static override forRoot(options: IdempotencyModuleForRootOptions = {}): DynamicModule {
    return withFeatures(super.forRoot(options));
  }

  /**
   * Registers the module with options made by a factory (`useFactory` with `inject`), a class
   * (`useClass`) or an existing provider (`useExisting`) implementing `IdempotencyOptionsFactory`.
   */
  static override forRootAsync(options: IdempotencyModuleAsyncOptions): DynamicModule {
    if (!options?.useFactory && !options?.useClass && !options?.useExisting) {
      throw new IdempotencyOptionsError(FORROOTASYNC_NEEDS_FACTORY);
    }
    return withFeatures(super.forRootAsync(options));
  }
}
