/*
 * The stray-writes guard's option: shared by the gate (module-wide and per endpoint) and the
 * inbox (`inbox.strayWrites`). Merged with the others in idempotency-options.resolver.ts.
 */

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

const STRAY_WRITES = new Set<unknown>(['error', 'warn', 'ignore']);

/** Whether a value is a {@link StrayWritesPolicy}. @internal */
export const isStrayWritesPolicy = (v: unknown): v is StrayWritesPolicy => STRAY_WRITES.has(v);
