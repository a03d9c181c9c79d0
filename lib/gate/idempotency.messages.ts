/** Texts of errors raised at bootstrap or by misuse (not HTTP answers). */
export const NO_TRANSACTION_HOST = (name?: string) =>
  `IdempotencyModule: the nestjs-cls transactional plugin is not registered${name ? ` for connectionName "${name}"` : ''}. ` +
  'Register it in the root module: ClsModule.forRoot({ global: true, middleware: { mount: true }, plugins: [new ClsPluginTransactional({ ' +
  `${name ? `connectionName: '${name}', ` : ''}adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }) })] })`;
export const IDEMPOTENT_WITHOUT_MODULE =
  'IdempotencyModule: @Idempotent() is used but IdempotencyModule is not imported. ' +
  'Import IdempotencyModule.forRoot() (or forRootAsync()) once in the root module, next to TypeOrmModule.forRoot() and ClsModule.forRoot().';
export const RESPONSE_PASSTHROUGH = (where: string) =>
  `@Idempotent() on ${where}: the handler injects the raw response with @Res() (no passthrough) or is an @Sse() stream, so its answer cannot be stored and replayed. Return a value instead, or use @Res({ passthrough: true }).`;
export const CAPTURE_TIMEOUT =
  'The response of an @Idempotent() handler was not written within 30 s; the request was rolled back.';
export const FILE_NOT_SENT = (method: string) =>
  `res.${method}() was not run: on an @Idempotent() endpoint a file cannot be stored for replay.`;

export const STORED_RESPONSE_KEY_UNKNOWN = (keyId: string) =>
  `The response stored for this Idempotency-Key is sealed under the encryption key "${keyId}", which is not in the key ring (encryption.keys). The request was not run again; put the key "${keyId}" back in the ring to replay it.`;
export const STORED_RESPONSE_NOT_ENCRYPTED =
  'The response stored for this Idempotency-Key is not encrypted, and encryption.keys is set: it is refused, not replayed. The request was not run again (encryption.acceptPlaintext: true replays such answers during a migration).';

export const NOT_SNAPSHOTTABLE_FIX =
  'An @Idempotent() endpoint must answer with a value the gate can store (JSON, text, a Buffer): read the stream into a Buffer first, or take @Idempotent() off a route that streams. The client got 500 response-not-snapshottable and nothing was committed.';

export const IDEMPOTENT_ON_EVENT = (where: string) =>
  `@Idempotent() on ${where}: an @EventPattern() handler sends no reply to store. De-duplicate events with @IdempotentConsumer() (the inbox), or make it a @MessagePattern() request.`;
export const KEY_FROM_ON_HTTP_ROUTE = (where: string) =>
  `@Idempotent() on ${where}: keyFrom(data, context) is for microservice handlers (@MessagePattern()). On an HTTP route use keyResolver: (req) => …`;

export const IDEMPOTENT_ON_GRAPHQL_READ = (where: string, kind: string) =>
  `@Idempotent() on ${where}: a GraphQL ${kind} has no effect to make exactly once, and its result is not stored. Put @Idempotent() on a @Mutation() resolver, or take it off this one.`;
export const KEY_RESOLVER_ON_GRAPHQL = (where: string) =>
  `@Idempotent() on ${where}: keyResolver(req) is for HTTP routes. On a GraphQL mutation use keyFrom: (args, context) => … (or the HTTP request's Idempotency-Key header, the default).`;
