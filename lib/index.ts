// Public API of nestjs-exactly-once: every export by name; nothing marked @internal.
// Optional parts have their own entry points (lib/entries/, package.json `exports`):
// `nestjs-exactly-once/admin`, `/redis`, `/kafka`, `/service-bus`, `/client-proxy`, and
// `/client`, `/testing`. Their root re-exports below are deprecated (kept for one minor version).
export { IdempotencyModule } from './idempotency.module';
export type {
  IdempotencyModuleAsyncOptions,
  IdempotencyModuleExtras,
  IdempotencyModuleForRootOptions,
  IdempotencyOptionsFactory,
} from './idempotency-module.interfaces';
export {
  defaultStoreStatus,
  DEFAULT_STORED_HEADERS,
  type IdempotencyMode,
  type InProgressPolicy,
  type FingerprintOptions,
  type FingerprintFunction,
  type StrayWritesPolicy,
  type RequestResolver,
  type IdempotencyRequest,
  type ContextResolver,
  type IdempotencyContextType,
  type IdempotentRpcRequest,
  type IdempotentGraphqlRequest,
  type KeyFrom,
  type IdempotencyEvent,
  type IdempotencyEndpointOptions,
  type OutboxOptions,
  type InboxAcknowledge,
  type InboxOptions,
  type CleanupOptions,
  type ReplayCacheOptions,
  type HealthOptions,
  type TableNames,
  type IdempotencyModuleOptions,
} from './idempotency.options';
export { REPLAYED_HEADER } from './idempotency.constants';
// Errors: every error the library throws at the app extends ExactlyOnceError (`code`, data in fields)
export { ExactlyOnceError } from './errors/exactly-once.error';
export { IdempotencyOptionsError } from './errors/idempotency-options.error';
export { IdempotencyMisconfiguredError } from './persistence/database-misconfigured';
export { StoredAnswerError, type StoredAnswerFault } from './encryption/answer-envelope';
export { EntityTagSyntaxError } from './conditional/entity-tag';
// At rest encryption of stored answers (key ring, re-encryption job)
export {
  KeyRing,
  keysFromEnv,
  LEGACY_KEY_ID,
  type EncryptionKeyOption,
  type EncryptionOptions,
} from './encryption/key-ring';
export {
  reencryptStoredAnswers,
  type ReencryptOptions,
  type ReencryptReport,
} from './encryption/reencrypt-stored-answers';
export type { ReplayCacheStore } from './persistence/replay-cache.store';
/** @deprecated Import from `nestjs-exactly-once/redis`; this root re-export is removed in the next minor version. */
export {
  RedisReplayCacheStore,
  type RedisCommandClient,
  type RedisReplayCacheStoreOptions,
} from './entries/redis';
export { LibraryClock } from './persistence/library-clock';
export { DIAGNOSTICS_CHANNELS } from './diagnostics/diagnostics.channels';
// Events: one union for gate, relay and inbox, through onEvent, ExactlyOnceEvents.events$ and EVENT_CHANNELS
export { ExactlyOnceEvents } from './events/exactly-once.events';
export { EVENT_CHANNELS } from './events/event.channels';
export type {
  ExactlyOnceEvent,
  ExactlyOnceEventFamily,
  GateEvent,
  RelayEvent,
  RelayPublishedEvent,
  RelayRetryEvent,
  RelayDeadEvent,
  RelayLeaseLostEvent,
  InboxEvent,
} from './events/exactly-once-event';

// HTTP idempotency gate
export { Idempotent } from './gate/idempotent.decorator';
export { IdempotencyInterceptor } from './gate/idempotency.interceptor';
export { IdempotencyExceptionFilter } from './gate/idempotency-exception.filter';
export { IdempotencyContext, IdempotencyKey, deriveKey } from './gate/idempotency-context';
// Microservice requests (@MessagePattern) under @Idempotent(): the problem an RpcException carries
export type { RpcProblem } from './rpc/rpc.errors';
export type { IdempotencyInfo } from './gate/idempotency-context';

// problem+json answers (RFC 9457), for every feature
export {
  ProblemException,
  PROBLEM_TYPES,
  ProblemDetailsFilter,
  type ProblemDetails,
} from './problem-details';

// Transactional outbox
export { OutboxService } from './outbox/outbox.service';
export { OutboxRelay } from './outbox/outbox-relay.service';
export { OutboxAdminService } from './outbox/outbox-admin.service';
export type {
  OutboxDeadLetterFilter,
  OutboxEntry,
  OutboxListFilter,
} from './outbox/outbox-admin.service';
export type {
  OutboxBackoff,
  OutboxFailureOptions,
  OutboxMaxAttemptsByType,
  OutboxRetryIf,
} from './outbox/outbox-failure.options';
export type { OutboxFailureRecord } from './outbox/outbox-failure.policy';
export type {
  OutboxRelayStatus,
  OutboxBatchResult,
  OutboxRelayOutage,
  OutboxPublisherStatus,
  OutboxPublishers,
} from './outbox/outbox-relay.service';
export { DEFAULT_ROUTE } from './outbox/outbox-routing.options';
export type { OutboxRoutingOptions } from './outbox/outbox-routing.options';
export { OnOutboxMessage } from './outbox/handlers/on-outbox-message.decorator';
export type { OnOutboxMessageOptions } from './outbox/handlers/on-outbox-message.decorator';
export type { OutboxHandlerContext } from './outbox/handlers/outbox-handler.interface';
export { OutboxHandlersRegistry } from './outbox/handlers/outbox-handlers.registry';
export { InProcessPublisher, inProcessPublisher } from './outbox/publishers/in-process.publisher';
export { OutboxPublisher } from './outbox/outbox-publisher.interface';
export type { OutboxEvent, OutboxMessage } from './outbox/outbox-message.interface';
export { OUTBOX_HEADERS } from './outbox/outbox.constants';
export {
  OutboxTransactionRequiredError,
  InvalidOutboxEventError,
  OutboxPublishTimeoutError,
  NonRetryableError,
  OutboxDeadFilterRequiredError,
  PublisherUnavailableError,
  OutboxRouteError,
  NoOutboxHandlerError,
} from './outbox/outbox.errors';
export { isConnectionError } from './outbox/outbox-unavailable';
/** @deprecated Import from `nestjs-exactly-once/client-proxy`; this root re-export is removed in the next minor version. */
export {
  ClientProxyPublisher,
  type ClientProxyPublisherOptions,
  type ClientProxyTransport,
  type OutboxEnvelope,
} from './entries/client-proxy';
/** @deprecated Import from `nestjs-exactly-once/service-bus`; this root re-export is removed in the next minor version. */
export {
  ServiceBusPublisher,
  type ServiceBusPublisherOptions,
  type ServiceBusSenderLike,
  type ServiceBusMessageLike,
  type ServiceBusMessageBatchLike,
} from './entries/service-bus';
/** @deprecated Import from `nestjs-exactly-once/kafka`; this root re-export is removed in the next minor version. */
export {
  KafkaPublisher,
  KafkaBatchInFlightError,
  KafkaPartitionsUnacknowledgedError,
  isKafkaUnavailableError,
  type KafkaPublisherOptions,
  type KafkaClientLike,
  type KafkaProducerLike,
  type KafkaRecord,
} from './entries/kafka';
export { FunctionPublisher } from './outbox/publishers/function.publisher';
export type { FunctionPublisherOptions } from './outbox/publishers/function.publisher';
export type { OutboxRow, OutboxStatus } from './persistence/dialects';

// Inbox
export { InboxService } from './inbox/inbox.service';
export { IdempotentConsumer } from './inbox/idempotent-consumer.decorator';
export { InboxInterceptor } from './inbox/inbox.interceptor';
export { InboxMessageIdMissingError, InboxMessageFailedError } from './inbox/inbox.errors';
export {
  defaultMessageId,
  transportMessageId,
  payloadMessageId,
} from './inbox/message-id.extractor';
export { MESSAGE_ID_HEADER } from './inbox/inbox.constants';
export type {
  InboxResult,
  InboxProcessOptions,
  ConsumedMessage,
  MessageIdExtractor,
  IdempotentConsumerOptions,
} from './inbox/inbox.interfaces';
export type { InboxRow, InboxStatus } from './persistence/dialects';

// Conditional requests (ETag / If-Match)
export {
  ConditionalUpdate,
  ConditionalRead,
  ConditionalInterceptor,
  ConditionalWriter,
  ConditionalContext,
  Preconditions,
  readPreconditions,
  formatEntityTag,
  parseEntityTag,
  parseEntityTagCondition,
  strongMatch,
  weakMatch,
  versionToETag,
  RowVersionColumn,
  allowRowVersionColumns,
  preconditionFailed,
  preconditionRequired,
  PRECONDITION_INVALID_TYPE,
  type ConditionalUpdateOptions,
  type ConditionalWriteResult,
  type VersionedResult,
  type EntityId,
  type EntityTag,
  type EntityTagCondition,
} from './conditional';

// Persistence
export { getIdempotencyEntities } from './persistence/entities';
export type { IdempotencyRecord, EntityOptions, LibraryTableNaming } from './persistence/entities';
export { withExactlyOnce } from './persistence/entities/with-exactly-once.helper';
export type { ExactlyOnceDataSourceOptions } from './persistence/entities/with-exactly-once.helper';
export type { InboxMessage } from './persistence/entities';
export type { OutboxRecord } from './persistence/entities';
export { getIdempotencyMigrations } from './persistence/migrations';
export type { MigrationNamingOptions } from './persistence/migrations';

// Maintenance
export { MetricsService, METER_NAME, METRIC_NAMES } from './observability/metrics.service';
export type { OutboxBacklogSnapshot } from './observability/metrics.service';
export { CleanupService } from './maintenance/cleanup.service';
export type { CleanupReport, CleanupRunOptions, CleanupTable } from './maintenance/cleanup.service';
export { IdempotencyHealthIndicator } from './maintenance/health.indicator';
export type {
  OutboxHealthDetails,
  OutboxHealthResult,
  RelayLiveness,
} from './maintenance/health.indicator';
export {
  IdempotencyAdminService,
  INBOX_STATUSES,
  OUTBOX_STATUSES,
  THROUGHPUT_MINUTES,
} from './maintenance/admin.service';
export type {
  AdminOverview,
  InboxConsumerSummary,
  InboxEntry,
  InboxListFilter,
  IdempotencyKeyView,
  IdempotencyScopeRef,
  PurgeResult,
  RequeueResult,
  InboxResetResult,
} from './maintenance/admin.service';
/** @deprecated Import from `nestjs-exactly-once/admin`; this root re-export is removed in the next minor version. */
export {
  IdempotencyAdminModule,
  type AdminModuleOptions,
  createAdminController,
  ADMIN_PROBLEM_TYPES,
  type AdminControllerOptions,
  AdminSameOriginGuard,
  defaultAdminPrincipal,
  type AdminPrincipalResolver,
  createAdminConsoleController,
  type AdminConsoleControllerOptions,
  type AdminConsoleOptions,
  CONSOLE_CSP,
} from './entries/admin';
