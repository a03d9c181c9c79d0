import type { IncomingHttpHeaders } from 'node:http';
import { stripUndefined } from '../internal/strip-undefined';
import { defaultStrayWrites, type StrayWritesPolicy } from '../persistence/stray-writes.options';
import { isStrayWritesPolicy } from '../persistence/stray-writes.options';

/*
 * The gate's options (`@Idempotent()` and the module-wide defaults of every guarded endpoint):
 * their types, defaults and checks. Merged with the other features' options in
 * idempotency-options.resolver.ts.
 */

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
 * Resolves a string from the framework's request object (Express or Fastify). Checked like a
 * method (bivariantly), so a resolver written for the platform's own request type
 * (`(req: Request) => …`, `(req: FastifyRequest) => …`) is accepted where an
 * `IdempotencyRequest` is given.
 */
export type RequestResolver<TRequest = any> = {
  /** The value read from `request`; undefined, null or '' means none. */
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
  /** The tenant or principal of `request` in a `contextType` call; undefined, null or '' means none (`-`). */
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
  /** `gate.<kind>`: the event's place in the `ExactlyOnceEvent` union. */
  type: `gate.${IdempotencyEvent['kind']}`;
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

/** The gate's options with every default applied (module-wide, or one endpoint's). */
export interface ResolvedGateOptions extends Required<
  Omit<
    IdempotencyEndpointOptions,
    'inProgress' | 'fingerprint' | 'keyResolver' | 'keyFrom' | 'skip' | 'statusHeader' | 'onEvent'
  >
> {
  inProgress: Required<InProgressPolicy>;
  fingerprint: ResolvedFingerprint;
  keyResolver?: RequestResolver;
  keyFrom?: KeyFrom;
  skip?: (request: any) => boolean;
  /** The status header's name, or undefined when off. */
  statusHeader?: string;
  onEvent?: (event: IdempotencyEvent) => void;
}

/** The fingerprint setting after defaults: the default one tuned by options, a function, or none. */
export type ResolvedFingerprint = Required<FingerprintOptions> | FingerprintFunction | false;

const NEVER_STORED_4XX = new Set([408, 409, 425, 429]);

/** Default status policy: 2xx, 3xx and 4xx except transient ones; never 5xx. */
export const defaultStoreStatus = (status: number): boolean =>
  status >= 200 && status < 500 && !NEVER_STORED_4XX.has(status);

/** Response headers stored with an answer and replayed by default (`storedHeaders`). */
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

/** The gate's defaults. @internal */
export const GATE_DEFAULTS: ResolvedGateOptions = {
  mode: 'transactional',
  ttl: 24 * 60 * 60 * 1000,
  leaseMs: 10_000,
  required: true,
  headerName: 'Idempotency-Key',
  replayedHeaderName: 'Idempotency-Replayed',
  maxKeyLength: 255,
  storedHeaders: DEFAULT_STORED_HEADERS,
  maxResponseBytes: 1024 * 1024,
  oversizedResponse: 'reject',
  storeStatus: defaultStoreStatus,
  mismatchStatus: 422,
  inProgress: { policy: 'reject', maxWaitMs: 5000, pollIntervalMs: 100 },
  retryAfterSeconds: 1,
  fingerprint: { headers: [], excludeBodyPaths: [], includeBodyPaths: [] },
  strayWrites: defaultStrayWrites(),
};

/** A function or `false` replaces the fingerprint; an object tunes the default one. @internal */
export function mergeFingerprint(
  base: ResolvedFingerprint,
  override: IdempotencyEndpointOptions['fingerprint'],
): ResolvedFingerprint {
  if (override === undefined) return base;
  if (override === false || typeof override === 'function') return override;
  const from = typeof base === 'object' ? base : GATE_DEFAULTS.fingerprint;
  return { ...(from as Required<FingerprintOptions>), ...stripUndefined(override) };
}

/** The gate's own answer headers are never stored (a replay sets them anew). @internal */
export function withoutGateHeaders(o: ResolvedGateOptions): string[] {
  if (!Array.isArray(o.storedHeaders)) return o.storedHeaders;
  const own = [o.replayedHeaderName, o.statusHeader].map((h) => h?.toLowerCase());
  return o.storedHeaders.filter((h) => !own.includes(h));
}

/** `statusHeader: true` means `Idempotency-Status`. @internal */
export function statusHeaderName(v: boolean | string | undefined): string | undefined {
  if (v === undefined || v === false) return undefined;
  return v === true ? 'Idempotency-Status' : v;
}

/** A valid HTTP header name (RFC 9110 token). @internal */
export const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Checks of the gate's settings, module-wide and per endpoint. @internal */
export function validateGateOptions(o: ResolvedGateOptions, fail: (msg: string) => void): void {
  if (o.mode !== 'transactional' && o.mode !== 'leased') {
    fail(`mode must be 'transactional' or 'leased', got ${String(o.mode)}`);
  }
  if (!(o.ttl > 0)) fail('ttl must be a positive number of milliseconds');
  if (!(o.leaseMs > 0)) fail('leaseMs must be a positive number of milliseconds');
  if (!(o.maxKeyLength >= 1 && o.maxKeyLength <= 255)) {
    fail('maxKeyLength must be between 1 and 255');
  }
  if (!(o.maxResponseBytes > 0)) fail('maxResponseBytes must be positive');
  if (o.mismatchStatus !== 422 && o.mismatchStatus !== 409) {
    fail('mismatchStatus must be 422 or 409');
  }
  if (!HEADER_TOKEN.test(o.headerName)) {
    fail(`headerName "${o.headerName}" is not a valid header name`);
  }
  const p = o.inProgress;
  if (p.policy !== 'reject' && p.policy !== 'wait') {
    fail(`inProgress.policy must be 'reject' or 'wait', got ${String(p.policy)}`);
  }
  if (!(p.maxWaitMs >= 0)) fail('inProgress.maxWaitMs must be >= 0');
  if (!(p.pollIntervalMs > 0)) {
    fail('inProgress.pollIntervalMs must be a positive number of milliseconds');
  }
  if (o.oversizedResponse !== 'reject' && o.oversizedResponse !== 'store-status-only') {
    fail(
      `oversizedResponse must be 'reject' or 'store-status-only', got ${String(o.oversizedResponse)}`,
    );
  }
  if (!isStrayWritesPolicy(o.strayWrites)) {
    fail(`strayWrites must be 'error', 'warn' or 'ignore', got ${String(o.strayWrites)}`);
  }
  if (typeof o.storeStatus !== 'function') {
    fail('storeStatus must be a function (status) => boolean');
  }
  if (!(Number.isInteger(o.retryAfterSeconds) && o.retryAfterSeconds >= 0)) {
    fail('retryAfterSeconds must be a whole number >= 0');
  }
  if (!Array.isArray(o.storedHeaders)) fail('storedHeaders must be an array of header names');
  const f = o.fingerprint;
  if (f !== false && typeof f !== 'function') {
    if (typeof f !== 'object' || f === null) {
      fail(
        'fingerprint must be an object of options, a function (request) => string | Buffer, or false',
      );
    } else if (
      !Array.isArray(f.headers) ||
      !Array.isArray(f.excludeBodyPaths) ||
      !Array.isArray(f.includeBodyPaths)
    ) {
      fail(
        'fingerprint.headers, fingerprint.excludeBodyPaths and fingerprint.includeBodyPaths must be arrays',
      );
    }
  }
  for (const [name, fn] of [
    ['keyResolver', o.keyResolver],
    ['skip', o.skip],
    ['onEvent', o.onEvent],
  ] as const) {
    if (fn !== undefined && typeof fn !== 'function') fail(`${name} must be a function`);
  }
  for (const [name, header] of [
    ['replayedHeaderName', o.replayedHeaderName],
    ['statusHeader', o.statusHeader],
  ] as const) {
    if (header !== undefined && !HEADER_TOKEN.test(header)) {
      fail(`${name} "${String(header)}" is not a valid header name`);
    }
  }
}
