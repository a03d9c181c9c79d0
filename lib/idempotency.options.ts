import type { LoggerService } from '@nestjs/common';
import type { EncryptionOptions, KeyRing } from './encryption/key-ring';
import type { ExactlyOnceEvent } from './events/exactly-once-event';
import type {
  ContextResolver,
  IdempotencyEndpointOptions,
  ResolvedGateOptions,
} from './gate/gate.options';
import type { InboxOptions, ResolvedInboxOptions } from './inbox/inbox.options';
import type { CleanupOptions } from './maintenance/cleanup.options';
import type { HealthOptions } from './maintenance/health.options';
import type { OutboxOptions, ResolvedOutboxOptions } from './outbox/outbox.options';
import type { TableNames } from './persistence/persistence.options';
import type {
  ReplayCacheOptions,
  ResolvedReplayCacheOptions,
} from './persistence/replay-cache.options';

/*
 * The module's options, assembled from each feature's options file (types, defaults and checks
 * live beside the code they configure):
 *   gate/gate.options.ts                  the gate (`@Idempotent()` and its module-wide defaults)
 *   outbox/outbox.options.ts              `outbox`
 *   inbox/inbox.options.ts                `inbox`
 *   maintenance/cleanup.options.ts        `cleanup`
 *   maintenance/health.options.ts         `health`
 *   persistence/replay-cache.options.ts   `replayCache`
 *   persistence/persistence.options.ts    `tables`, `schema`
 *   persistence/stray-writes.options.ts   `strayWrites` (gate and inbox)
 *   encryption/key-ring.ts                `encryption`
 * The defaults are merged in one place, idempotency-options.resolver.ts. A new feature's options
 * get their own file in the feature's folder and a field here.
 */

export {
  DEFAULT_STORED_HEADERS,
  defaultStoreStatus,
  NEVER_STORED_HEADERS,
  type ContextResolver,
  type FingerprintFunction,
  type FingerprintOptions,
  type IdempotencyContextType,
  type IdempotencyEndpointOptions,
  type IdempotencyEvent,
  type IdempotencyMode,
  type IdempotencyRequest,
  type IdempotentGraphqlRequest,
  type IdempotentRpcRequest,
  type InProgressPolicy,
  type KeyFrom,
  type RequestResolver,
  type ResolvedFingerprint,
} from './gate/gate.options';
export { defaultStrayWrites, type StrayWritesPolicy } from './persistence/stray-writes.options';
export type { OutboxOptions } from './outbox/outbox.options';
export type { InboxAcknowledge, InboxOptions } from './inbox/inbox.options';
export type { CleanupOptions } from './maintenance/cleanup.options';
export type { HealthOptions } from './maintenance/health.options';
export type { ReplayCacheOptions } from './persistence/replay-cache.options';
export type { TableNames } from './persistence/persistence.options';

/** The options of `IdempotencyModule.forRoot()` (and what `forRootAsync()`'s factory returns). */
export interface IdempotencyModuleOptions extends IdempotencyEndpointOptions<any> {
  /** Name of the @nestjs/typeorm DataSource (as given to `TypeOrmModule.forRoot({ name })`). Default: the default one. */
  dataSource?: string;
  /** nestjs-cls transactional connection name, when the app registered the plugin with one. */
  transactionConnectionName?: string;
  /** Database schema of the tables (SQL Server and PostgreSQL). */
  schema?: string;
  /** Names of the library's tables (see {@link TableNames}). */
  tables?: TableNames;
  /**
   * Resolves the tenant from the request; told the context type (`http`, `rpc`), and given an
   * {@link IdempotentRpcRequest} for microservice handlers. Default: none (`-`).
   */
  tenantResolver?: ContextResolver;
  /** Resolves the principal (user, API client) from the request, as `tenantResolver`. Default: none (`-`). */
  principalResolver?: ContextResolver;
  /** Lock wait before a duplicate of an in-flight request answers 409, in ms. Default 100. */
  lockTimeoutMs?: number;
  /**
   * Deprecated: use `encryption: { keys }`. Encrypts stored answers at rest with AES-256-GCM
   * under this 32-byte key (Buffer, or base64/hex string): a key ring of one, under the id
   * `default`.
   */
  encryptionKey?: Buffer | string;
  /**
   * Encrypts stored answers (headers and body) at rest with AES-256-GCM under a key ring: the
   * first key seals, every key opens; each envelope names its key and is bound to its record.
   * While set, a plaintext stored answer is refused (500 problem) unless `acceptPlaintext`.
   * See docs/security.md.
   */
  encryption?: EncryptionOptions;
  /** The transactional outbox and its relay (see {@link OutboxOptions}). */
  outbox?: OutboxOptions;
  /** The inbox of `@IdempotentConsumer()` handlers (see {@link InboxOptions}). */
  inbox?: InboxOptions;
  /** The cleanup of expired records (see {@link CleanupOptions}). */
  cleanup?: CleanupOptions;
  /** Thresholds of the health indicator (see {@link HealthOptions}). */
  health?: HealthOptions;
  /** The replay cache of completed answers (on by default), or false to turn it off. */
  replayCache?: ReplayCacheOptions | false;
  /** A logger, or false to silence the library. Default: Nest's Logger. */
  logger?: LoggerService | false;
  /**
   * The module installs `ProblemDetailsFilter` as the app's global exception filter of last
   * resort, so that every HTTP error the app answers (a `413` of the body parser, a 5xx of an
   * unguarded route, an `HttpException`) is `application/problem+json`. The app's own filters
   * (method, controller, `APP_FILTER`, `app.useGlobalFilters()`) still come first for what they
   * catch. `false`: the app answers errors itself; the module then warns at boot unless a
   * `ProblemDetailsFilter` (or a subclass) is among the app's global filters. Default `true`.
   */
  problemDetailsFilter?: boolean;
  /**
   * Called (synchronously, errors ignored and logged) for every event of the library: the gate's
   * answers (`gate.created`, `gate.replayed`, `gate.conflict`, `gate.mismatch`; an endpoint's
   * own `@Idempotent({ onEvent })` replaces this hook for its requests), the relay's
   * (`relay.published`, `relay.retry`, `relay.dead`, `relay.lease-lost`) and the inbox's
   * (`inbox.processed`, `inbox.duplicate`, `inbox.failed`). Switch on `event.type`. Keep it fast:
   * it runs on the request's and the relay's path. The same events: `ExactlyOnceEvents.events$`
   * and the diagnostics channels `EVENT_CHANNELS`.
   */
  onEvent?: { hook(event: ExactlyOnceEvent): void }['hook'];
}

/** Options with every default applied. */
export interface ResolvedIdempotencyOptions extends ResolvedGateOptions {
  dataSource?: string;
  transactionConnectionName?: string;
  schema?: string;
  /** The deprecated single key, when given (it is also the ring's only key, id `default`). */
  encryptionKey?: Buffer;
  /** The key ring of stored answers (from `encryption`, or `encryptionKey`); undefined: not encrypted. */
  encryption?: KeyRing;
  tenantResolver?: ContextResolver;
  principalResolver?: ContextResolver;
  logger?: LoggerService | false;
  lockTimeoutMs: number;
  problemDetailsFilter: boolean;
  tables: Required<TableNames>;
  outbox: ResolvedOutboxOptions;
  inbox: ResolvedInboxOptions;
  cleanup: Required<CleanupOptions>;
  health: Required<HealthOptions>;
  replayCache: ResolvedReplayCacheOptions | false;
}

/** Options that apply to one endpoint after merging module options and `@Idempotent()` overrides. */
export type ResolvedEndpointOptions = ResolvedIdempotencyOptions;
