import type { ConfigurableModuleOptionsFactory } from '@nestjs/common';
import type {
  IDEMPOTENCY_ASYNC_OPTIONS_TYPE,
  IDEMPOTENCY_OPTIONS_TYPE,
} from './idempotency.module-definition';
import type { IdempotencyModuleOptions } from './idempotency.options';

export type { IdempotencyModuleExtras } from './idempotency.module-definition';

/** A class that makes the module options, for `forRootAsync({ useClass })` / `useExisting`. */
export type IdempotencyOptionsFactory = ConfigurableModuleOptionsFactory<
  IdempotencyModuleOptions,
  'createIdempotencyOptions'
>;

/** What `IdempotencyModule.forRoot()` takes: the options and the extras (`isGlobal`). */
export type IdempotencyModuleForRootOptions = typeof IDEMPOTENCY_OPTIONS_TYPE;

/**
 * What `IdempotencyModule.forRootAsync()` takes: `imports`, `inject` and one of `useFactory`,
 * `useClass`, `useExisting` (Nest's `ConfigurableModuleAsyncOptions`), and the extras
 * (`isGlobal`, `extraProviders`).
 */
export type IdempotencyModuleAsyncOptions = typeof IDEMPOTENCY_ASYNC_OPTIONS_TYPE;
