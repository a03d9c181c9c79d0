import type {
  InjectionToken,
  ModuleMetadata,
  OptionalFactoryDependency,
  Provider,
  Type,
} from '@nestjs/common';
import type { IdempotencyModuleOptions } from './idempotency.options';

export interface IdempotencyOptionsFactory {
  createIdempotencyOptions(): Promise<IdempotencyModuleOptions> | IdempotencyModuleOptions;
}

export interface IdempotencyModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  useFactory?: (...args: any[]) => Promise<IdempotencyModuleOptions> | IdempotencyModuleOptions;
  /** Providers given to `useFactory`, in order. */
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  useClass?: Type<IdempotencyOptionsFactory>;
  useExisting?: Type<IdempotencyOptionsFactory>;
  /** Extra providers available to the factory. */
  extraProviders?: Provider[];
}
