/** Texts of errors raised at bootstrap or by misuse (not HTTP answers). */
export const NO_TRANSACTION_HOST = (name?: string) =>
  `IdempotencyModule needs nestjs-cls with the transactional plugin${name ? ` (connectionName "${name}")` : ''}: ` +
  `ClsModule.forRoot({ global: true, plugins: [new ClsPluginTransactional({ adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }) })] })`;
export const RESPONSE_PASSTHROUGH = (where: string) =>
  `@Idempotent() on ${where}: the handler injects the raw response with @Res() (no passthrough) or is an @Sse() stream, so its answer cannot be stored and replayed. Return a value instead, or use @Res({ passthrough: true }).`;
export const CAPTURE_TIMEOUT =
  'The response of an @Idempotent() handler was not written within 30 s; the request was rolled back.';
