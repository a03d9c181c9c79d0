import type { ModuleMetadata, Type } from '@nestjs/common';
import type { IdempotencyModuleOptions } from './idempotency.options';

export interface IdempotencyOptionsFactory {
  createIdempotencyOptions(): Promise<IdempotencyModuleOptions> | IdempotencyModuleOptions;
}

export interface IdempotencyModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  useFactory?: (...args: any[]) => Promise<IdempotencyModuleOptions> | IdempotencyModuleOptions;
  inject?: any[];
  useClass?: Type<IdempotencyOptionsFactory>;
  useExisting?: Type<IdempotencyOptionsFactory>;
  /** Extra providers available to the factory. */
  extraProviders?: any[];
}
