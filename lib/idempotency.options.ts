import type { LoggerService } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import type { OutboxPublisher } from './outbox/outbox-publisher.interface';
import type { ReplayCacheStore } from './persistence/replay-cache.store';
import type { EncryptionOptions, KeyRing } from './encryption/key-ring';

/** How a guarded handler runs relative to its reservation. See README "Execution modes". */
export type IdempotencyMode = 'transactional' | 'leased';

/** What happens to a request that arrives while the first one with its key is still running. */
export interface InProgressPolicy {
  /** `reject` (default): 409 at once. `wait`: poll until the first completes (then replay) or `maxWaitMs` passes (then 409). */
  policy: 'reject' | 'wait';
  /** Longest wait under `wait`, in ms. Default 5000. */
  maxWaitMs?: number;
  /** Poll interval under `wait`, in ms. Default 100. */
  pollIntervalMs?: number;
}

/** Which parts of a request besides method, resource path, query and body go into the fingerprint. */
export interface FingerprintOptions {
  /** Request headers (case-insensitive) whose values are part of the fingerprint. */
  headers?: string[];
  /** Dot paths into a JSON body left out of the fingerprint (e.g. `meta.clientTimestamp`). */
  excludeBodyPaths?: string[];
  /**
   * Only these dot paths of a JSON body make the fingerprint (e.g. `['amount', 'currency']`);
   * everything else in the body may differ between retries. Default: the whole body.
   */
  includeBodyPaths?: string[];
}

/**
 * A fingerprint of your own: what two requests with the same key must share to be "the same
 * request". The gate hashes what it returns (SHA-256); method and resource are already part of
 * the key's scope.
 */
export type FingerprintFunction<TRequest = any> = (request: TRequest) => string | Buffer;

/**
 * What happens to a write statement (INSERT, UPDATE, DELETE, MERGE, REPLACE, UPSERT) issued on
 * the DataSource outside the request's transaction while a guarded handler (or an inbox
 * consumer) runs, e.g. through an `@InjectRepository()` repository: `error` refuses it and the
 * request answers 500 `…:misconfigured` (nothing committed); `warn` lets it run and logs once per
 * handler; `ignore` does not look. Default: `error`, or `warn` when `NODE_ENV=production`.
 */
export type StrayWritesPolicy = 'error' | 'warn' | 'ignore';

/** The default `strayWrites`: `warn` in production (`NODE_ENV=production`), else `error`. */
export const defaultStrayWrites = (): StrayWritesPolicy =>
  process.env.NODE_ENV === 'production' ? 'warn' : 'error';

/**
 * Resolves a string from the framework's request object (Express or Fastify). Checked like a
 * method (bivariantly), so a resolver written for the platform's own request type
 * (`(req: Request) => …`, `(req: FastifyRequest) => …`) is accepted where an
 * `IdempotencyRequest` is given.
 */
export type RequestResolver<TRequest = any> = {
  resolve(request: TRequest): string | undefined | null;
}['resolve'];

/**
 * The request as `tenantResolver` and `principalResolver` see it: what Express' `Request` and
 * Fastify's `FastifyRequest` have in common. A resolver may also declare the platform's type.
 */
export interface IdempotencyRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly params?: unknown;
  readonly query?: unknown;
  readonly body?: unknown;
  /**
   * What the app's authentication put on the request (Passport's `req.user`, a guard's own
   * field): its shape is the app's, so it is not narrowed here (`(req) => req.user?.id`).
   */
  readonly user?: any;
}

/**
 * The kind of Nest execution context a guarded call comes from. Records are scoped by it: an HTTP
 * key never answers an RPC request.
 */
export type IdempotencyContextType = 'http' | 'rpc' | 'graphql';

/**
 * What a microservice handler (`@MessagePattern`) guarded by `@Idempotent()` is, for `keyFrom`,
 * `tenantResolver`, `principalResolver` and `skip`: its payload, the transport's context
 * (NatsContext, RmqContext, TcpContext, …) and the handler's pattern as the scope shows it.
 */
export interface IdempotentRpcRequest<TData = any, TContext = any> extends IdempotencyRequest {
  /** `RPC`, so that a resolver written for HTTP requests reads no HTTP method. */
  readonly method: 'RPC';
  /** The handler's pattern. */
  readonly url: string;
  /** Empty: the transport's headers are in `context` (NatsContext.getHeaders(), RmqContext's message). */
  readonly headers: IncomingHttpHeaders;
  /** The payload (also `data`). */
  readonly body: TData;
  data: TData;
  context: TContext;
  pattern: string;
}

/**
 * What a GraphQL mutation field guarded by `@Idempotent()` is, for `keyFrom`, `tenantResolver`,
 * `principalResolver` and `skip`: its arguments, the GraphQL context, the resolve info, and the
 * HTTP request the operation came in (whose headers are `headers`, so a resolver written for HTTP
 * reads the same tenant header here).
 */
export interface IdempotentGraphqlRequest<TArgs = any, TContext = any> extends IdempotencyRequest {
  /** `GRAPHQL`, so that a resolver written for HTTP requests reads no HTTP method. */
  readonly method: 'GRAPHQL';
  /** The field's response path (`createPayment`, or its alias): what the scope names. */
  readonly url: string;
  /** The HTTP request's headers (empty when the operation did not come over HTTP). */
  readonly headers: IncomingHttpHeaders;
  /** The field's arguments (also `args`). */
  readonly body: TArgs;
  args: TArgs;
  /** The GraphQL context (`{ req }` by default with Apollo and Mercurius). */
  context: TContext;
  /** The field's GraphQLResolveInfo. */
  info: any;
  /** `Mutation.<field name>`: what the fingerprint names. */
  field: string;
  /** The field's response path, aliases included. */
  path: string;
  /** The HTTP request (Express' or Fastify's), when there is one. */
  req: any;
}

/**
 * Resolves the tenant or the principal of a guarded call. `request` is the framework's request
 * object for `http`, an {@link IdempotentGraphqlRequest} for `graphql` (the HTTP request's
 * headers, method `GRAPHQL`), an {@link IdempotentRpcRequest} for `rpc` (which is an `IdempotencyRequest`
 * too: method `RPC`, no HTTP headers, so a resolver written for HTTP reads nothing there rather
 * than throwing). A resolver may declare the platform's request type (checked bivariantly).
 */
export type ContextResolver = {
  resolve(
    request: IdempotencyRequest,
    contextType: IdempotencyContextType,
  ): string | undefined | null;
}['resolve'];

/**
 * The key of a microservice request read from its payload or its transport context, for
 * transports without headers (TCP, Redis) or keys carried elsewhere:
 * `keyFrom: (data) => data.requestId`; of a GraphQL mutation field from its arguments and the
 * GraphQL context: `keyFrom: (args) => args.input.requestId`. Undefined/null/'' means "no key" (400 when `required`).
 */
export type KeyFrom<TData = any, TContext = any> = (
  data: TData,
  context: TContext,
) => string | undefined | null;

/** What an `onEvent` hook is told about a guarded request. */
export interface IdempotencyEvent<TRequest = any> {
  /**
   * `created`: a first execution's answer was stored; `replayed`: a stored answer was sent again;
   * `conflict`: 409, the first request with this key is still in flight; `mismatch`: 422 (or the
   * configured `mismatchStatus`), the key was used for another request.
   */
  kind: 'created' | 'replayed' | 'conflict' | 'mismatch';
  /** Short SHA-256 of scope and key (keys themselves never leave the gate). */
  keyHash: string;
  method: string;
  /** The resource path the key is scoped to (`/customers/A`). */
  path: string;
  mode: IdempotencyMode;
  /** The status of the answer sent. */
  status: number;
  /** The framework's request object (Express or Fastify), e.g. to read the authenticated user. */
  request: TRequest;
}

/** Options that can be given module-wide and overridden per endpoint by `@Idempotent()`. */
export interface IdempotencyEndpointOptions<TRequest = any> {
  mode?: IdempotencyMode;
  /** How long a completed record is replayed, in ms. Default 24 h. */
  ttl?: number;
  /**
   * Leased mode: how long a started request holds its key after its process stops renewing it
   * (renewed every third of it while the handler runs), i.e. how long a retry waits after a crash
   * before it may take over, in ms. Default 10 s.
   */
  leaseMs?: number;
  /** Whether a request without a key is rejected (400). Default true. */
  required?: boolean;
  /** Key header name. Default `Idempotency-Key`. */
  headerName?: string;
  /** Longest accepted key, 1..255. Default 255. */
  maxKeyLength?: number;
  /** Response headers stored and replayed (case-insensitive). `Set-Cookie` and auth headers are never stored. */
  storedHeaders?: string[];
  /** Largest response body stored, in bytes. Default 1 MiB. */
  maxResponseBytes?: number;
  /**
   * A response over `maxResponseBytes`: `reject` (default) rolls the request back and answers 500
   * problem+json (nothing committed, the key stays free); `store-status-only` commits and stores the
   * status and headers without the body (a replay answers with an empty body and
   * `Idempotency-Replay-Body-Omitted: true`).
   */
  oversizedResponse?: 'reject' | 'store-status-only';
  /** Which handler statuses are stored and replayed. Default: 2xx, 3xx and 4xx except 408, 409, 425, 429. 5xx are never stored. */
  storeStatus?: (status: number) => boolean;
  /** Status for "same key, different request". Default 422. */
  mismatchStatus?: 422 | 409;
  inProgress?: InProgressPolicy;
  /**
   * `Retry-After` seconds on a 409 (request in progress). Transactional mode: always this value.
   * Leased mode: the time left on the first request's lease, at most this value, so that a client
   * polls while the first attempt is alive instead of sleeping through the whole lease. Default 1.
   */
  retryAfterSeconds?: number;
  /**
   * What makes two requests with one key "the same request" (otherwise 422): an object to tune the
   * default (headers, body paths to leave out or to keep), a function of your own, or `false` for
   * no fingerprint at all (every request with the key gets the first answer, whatever its body).
   */
  fingerprint?: FingerprintOptions | FingerprintFunction<TRequest> | false;
  /**
   * Takes the key from somewhere other than the `headerName` header, e.g. a webhook's event id in
   * the body: `(req) => req.body?.id`. Returning undefined/null/'' means "no key" (400 when
   * `required`). The value is checked like a header key (1..maxKeyLength visible ASCII characters).
   */
  keyResolver?: RequestResolver<TRequest>;
  /**
   * Microservice handlers (`@MessagePattern`): takes the key from the payload or the transport's
   * context instead of the transport's `headerName` header (which TCP and Redis do not have).
   * GraphQL mutations: `keyFrom(args, context)` instead of the HTTP request's header.
   * Not read on HTTP routes (use `keyResolver` there; an HTTP route with `keyFrom` fails at boot).
   */
  keyFrom?: KeyFrom;
  /** A request for which this returns true runs unguarded (e.g. internal callers). */
  skip?: (request: TRequest) => boolean;
  /**
   * Header set on a replayed answer. Default `Idempotency-Replayed`; Stripe's clients look for
   * `Idempotent-Replayed`.
   */
  replayedHeaderName?: string;
  /**
   * Opt-in: every guarded answer carries this header with `created` (the first execution's
   * answer) or `replayed`. `true` means `Idempotency-Status`. Default off.
   */
  statusHeader?: boolean | string;
  /**
   * Called (synchronously, errors ignored and logged) for every `created`, `replayed`,
   * `conflict` and `mismatch` answer, for apps that audit. Keep it fast: it runs on the request path.
   */
  onEvent?: (event: IdempotencyEvent<TRequest>) => void;
  /** Writes outside the request's transaction while the handler runs (see {@link StrayWritesPolicy}). */
  strayWrites?: StrayWritesPolicy;
}

export interface OutboxOptions {
  /** Run the relay in this process. Default true. */
  relayEnabled?: boolean;
  /** Poll interval in ms. Default 1000. */
  pollIntervalMs?: number;
  /** Messages claimed per batch. Default 100. */
  batchSize?: number;
  /** How long a claimed batch belongs to its relay, in ms. Default 30 s. */
  leaseMs?: number;
  /** Publish attempts before a message becomes dead. Default 10. */
  maxAttempts?: number;
  /** Backoff base and cap, in ms. Defaults 1000 and 300000. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Never publish a partition key's message while an older one with the same key is pending or in flight. Default false. */
  ordered?: boolean;
  /** Throw when `add()` is called with no ambient transaction and no explicit EntityManager. Default true. */
  requireTransaction?: boolean;
  /** Wake the relay in this process when a transaction with outbox rows commits. Default true. */
  wakeOnCommit?: boolean;
  /**
   * Longest wait for the broker to confirm one message (or a batch, for publishers that publish
   * batches), in ms; then the attempt counts as failed. Must be below `leaseMs`. Default 10000,
   * or half of `leaseMs` when that is shorter.
   */
  publishTimeoutMs?: number;
  /**
   * Longest wait on shutdown for the relay to finish its in-flight batch, in ms; then it stops
   * waiting (rows it still holds stay pending under their lease and are published again once it
   * lapses: nothing is lost). Bounds `app.close()` whatever the broker or database is doing.
   * Default `publishTimeoutMs` + 5000.
   */
  shutdownTimeoutMs?: number;
  /**
   * The publisher the relay sends through. Default: the `OutboxPublisher` provider registered
   * anywhere in the app (none: the relay does not start).
   */
  publisher?: OutboxPublisher;
}

/**
 * Who settles a RabbitMQ delivery of an `@IdempotentConsumer()` handler: `'auto'` (default) acks
 * it after the inbox transaction commits (processed, duplicate, recorded failed) and rejects it
 * when the handler failed, whenever the consuming server runs with `noAck: false`, and leaves it
 * alone under `noAck: true` (RabbitMQ acknowledged it on delivery); `true`: always (unless the
 * server is known to be `noAck: true`); `false`: never (the handler acks through its RmqContext).
 * Kafka: under `'auto'` and `true`, when the consuming `ServerKafka` runs with
 * `run: { autoCommit: false }`, the record's offset is committed once the inbox settled it;
 * under kafkajs' `autoCommit` kafkajs commits it once the handler resolved. `false`: the handler
 * commits itself. Other transports settle their messages themselves.
 */
export type InboxAcknowledge = 'auto' | boolean;

export interface InboxOptions {
  /** Settling RabbitMQ deliveries (see {@link InboxAcknowledge}). Default `'auto'`. */
  acknowledge?: InboxAcknowledge;
  /** Failed attempts of one message id before it is recorded as failed. Default 5. */
  maxAttempts?: number;
  /** After `maxAttempts`: record the message as failed and acknowledge it (`ack`, default) or keep rethrowing (`rethrow`). */
  onMaxAttempts?: 'ack' | 'rethrow';
  /** Writes outside the consumer's transaction while it runs (see {@link StrayWritesPolicy}). Default: the module's `strayWrites`. */
  strayWrites?: StrayWritesPolicy;
  /**
   * Delay before a failed message runs again, in ms: `backoffBaseMs · 2^(failed attempts - 1)`
   * with jitter, capped at `backoffMaxMs`. How the delay is kept depends on the transport
   * (RabbitMQ: the delivery is held unacknowledged, then requeued; see docs/inbox.md).
   * Default 1000.
   */
  backoffBaseMs?: number;
  /** Longest delay between two attempts of one message, in ms. Default 60000. */
  backoffMaxMs?: number;
}

export interface CleanupOptions {
  /** Run cleanup in this process. Default true. */
  enabled?: boolean;
  /** Interval in ms. Default 60 s. */
  intervalMs?: number;
  /** Rows per DELETE statement (≤ 4000 on SQL Server). Default 1000. */
  batchSize?: number;
  /** Time budget per run, in ms. Default 5000. */
  timeBudgetMs?: number;
  /**
   * Share of a run's wall time spent in DELETE statements, 0 < d <= 1: after a full batch the run
   * pauses for the statement's duration × (1 - d) / d, so cleanup never monopolizes a connection
   * or the database. 1: statements back to back. Default 0.25.
   */
  dutyCycle?: number;
  /** Sent outbox messages are kept this long, in ms. Default 7 days. */
  outboxRetentionMs?: number;
  /** Inbox records are kept this long, in ms (must exceed the broker's redelivery window). Default 7 days. */
  inboxRetentionMs?: number;
}

/**
 * The replay cache: completed answers kept in this process, so that a retry of a completed request
 * is answered with no statement. An entry lives at most until its record expires and at most
 * `maxAgeMs`; an admin eviction made through ANOTHER process is seen here after at most
 * `maxAgeMs` (through this process: at once).
 */
export interface ReplayCacheOptions {
  /** Memory budget in bytes (least recently used answers go first). Default 16 MiB; 0 keeps nothing in memory. */
  maxBytes?: number;
  /** Longest life of an entry (in memory and in `store`), in ms. Default 60 s. */
  maxAgeMs?: number;
  /**
   * A shared tier that every instance reads when its memory misses, e.g.
   * `new RedisReplayCacheStore(redis)`: a retry that lands on another instance is answered with
   * one store read and no statement. Written once per first execution, after its commit; an
   * admin eviction deletes the key there too. Default: none.
   */
  store?: ReplayCacheStore;
  /** Longest wait for the store's answer before the ledger answers instead, in ms. Default 100. */
  storeTimeoutMs?: number;
}

/** Thresholds of the health indicator (`IdempotencyHealthIndicator`); each can be overridden per check. */
export interface HealthOptions {
  /** The relay in this process counts as dead when it has not polled for this long, in ms. Default 30 s. */
  relayHeartbeatTimeoutMs?: number;
  /** Unhealthy when the oldest pending outbox message is older than this, in ms. Default 5 minutes. */
  maxPendingAgeMs?: number;
  /** Unhealthy when more outbox messages than this are dead. Default: no limit (the count is only reported). */
  maxDeadLetters?: number;
}

export interface TableNames {
  idempotency?: string;
  outbox?: string;
  inbox?: string;
}

export interface IdempotencyModuleOptions extends IdempotencyEndpointOptions<any> {
  /** Name of the @nestjs/typeorm DataSource (as given to `TypeOrmModule.forRoot({ name })`). Default: the default one. */
  dataSource?: string;
  /** nestjs-cls transactional connection name, when the app registered the plugin with one. */
  transactionConnectionName?: string;
  /** Database schema of the tables (SQL Server and PostgreSQL). */
  schema?: string;
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
  outbox?: OutboxOptions;
  inbox?: InboxOptions;
  cleanup?: CleanupOptions;
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
}

/** Options with every default applied. */
export interface ResolvedIdempotencyOptions extends Required<
  Omit<
    IdempotencyModuleOptions,
    | 'dataSource'
    | 'transactionConnectionName'
    | 'schema'
    | 'encryptionKey'
    | 'encryption'
    | 'tenantResolver'
    | 'principalResolver'
    | 'logger'
    | 'tables'
    | 'outbox'
    | 'inbox'
    | 'cleanup'
    | 'health'
    | 'replayCache'
    | 'inProgress'
    | 'fingerprint'
    | 'keyResolver'
    | 'keyFrom'
    | 'skip'
    | 'statusHeader'
    | 'onEvent'
  >
> {
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
  tables: Required<TableNames>;
  inProgress: Required<InProgressPolicy>;
  fingerprint: ResolvedFingerprint;
  keyResolver?: RequestResolver;
  keyFrom?: KeyFrom;
  skip?: (request: any) => boolean;
  /** The status header's name, or undefined when off. */
  statusHeader?: string;
  onEvent?: (event: IdempotencyEvent) => void;
  outbox: Required<Omit<OutboxOptions, 'publisher'>> & Pick<OutboxOptions, 'publisher'>;
  inbox: Required<InboxOptions>;
  cleanup: Required<CleanupOptions>;
  health: Required<HealthOptions>;
  replayCache: (Required<Omit<ReplayCacheOptions, 'store'>> & { store?: ReplayCacheStore }) | false;
}

/** The fingerprint setting after defaults: the default one tuned by options, a function, or none. */
export type ResolvedFingerprint = Required<FingerprintOptions> | FingerprintFunction | false;

/** Options that apply to one endpoint after merging module options and `@Idempotent()` overrides. */
export type ResolvedEndpointOptions = ResolvedIdempotencyOptions;

const NEVER_STORED_4XX = new Set([408, 409, 425, 429]);

/** Default status policy: 2xx, 3xx and 4xx except transient ones; never 5xx. */
export const defaultStoreStatus = (status: number): boolean =>
  status >= 200 && status < 500 && !NEVER_STORED_4XX.has(status);

export const DEFAULT_STORED_HEADERS = [
  'content-type',
  'content-language',
  'location',
  'etag',
  'last-modified',
  'cache-control',
];

/** Headers that are never stored, whatever the allow-list says. */
export const NEVER_STORED_HEADERS = new Set([
  'set-cookie',
  'authorization',
  'proxy-authorization',
  'www-authenticate',
  'proxy-authenticate',
  'cookie',
  'content-length',
  'transfer-encoding',
  'connection',
  'idempotency-replayed',
  'idempotency-status',
]);
