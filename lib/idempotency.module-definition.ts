import { ConfigurableModuleBuilder, type Provider } from '@nestjs/common';
import { IDEMPOTENCY_RAW_OPTIONS } from './idempotency.constants';
import type { IdempotencyModuleOptions } from './idempotency.options';

/**
 * What `forRoot()` and `forRootAsync()` take besides the options themselves: they shape the
 * Nest module, not the library's behaviour.
 */
export interface IdempotencyModuleExtras {
  /**
   * Register the module globally (its services injectable in every module, as the decorators
   * need). Default `true`; `false` only for an app that imports the module in every module that
   * uses it.
   */
  isGlobal?: boolean;
  /**
   * Providers available to `forRootAsync()`'s factory (and its `useClass`) without a module of
   * their own. Default none.
   */
  extraProviders?: Provider[];
}

/**
 * The module's definition by Nest's `ConfigurableModuleBuilder`: `forRoot(options)` and
 * `forRootAsync({ imports, inject, useFactory | useClass | useExisting })`, the options as given
 * provided under `IDEMPOTENCY_RAW_OPTIONS` (the resolver merges the defaults once, for both), and
 * the extras (`isGlobal`, `extraProviders`). `IdempotencyModule` extends the class and adds its
 * providers.
 * @internal
 */
export const {
  ConfigurableModuleClass: ConfigurableIdempotencyModule,
  OPTIONS_TYPE: IDEMPOTENCY_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: IDEMPOTENCY_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<IdempotencyModuleOptions>({
  moduleName: 'Idempotency',
  optionsInjectionToken: IDEMPOTENCY_RAW_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createIdempotencyOptions')
  .setExtras<IdempotencyModuleExtras>(
    { isGlobal: true, extraProviders: [] },
    (definition, extras) => ({
      ...definition,
      global: extras.isGlobal,
      providers: [...(definition.providers ?? []), ...(extras.extraProviders ?? [])],
    }),
  )
  .build();

/** The boot error of a `forRootAsync()` call with no way to make the options. @internal */
export const FORROOTASYNC_NEEDS_FACTORY =
  'IdempotencyModule.forRootAsync() needs useFactory, useClass or useExisting.';
