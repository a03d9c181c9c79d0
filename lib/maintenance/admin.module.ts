import { DynamicModule, Module, type Type } from '@nestjs/common';
import type { AdminControllerOptions } from './admin.controller';
import { createAdminController } from './admin.controller';
import { createAdminConsoleController } from './console/console.controller';
import type { AdminConsoleOptions } from './console/console.options';

/** Options of `IdempotencyAdminModule.register`. */
export interface AdminModuleOptions extends AdminControllerOptions {
  /**
   * Serve the operator's console at `<path>/console`, behind the same guards (default off).
   * Without guards and with NODE_ENV=production the app refuses to start unless
   * `console: { allowUnguarded: true }`.
   */
  console?: boolean | AdminConsoleOptions;
}

/**
 * The optional HTTP admin API over `IdempotencyAdminService` (outbox listing, re-queue, purge;
 * inbox records; idempotency key inspection and eviction) and, opt-in, the operator's console.
 * Not mounted unless the app imports it:
 * `IdempotencyAdminModule.register({ path: 'admin', guards: [AdminGuard], console: true })`.
 * Needs `IdempotencyModule` (global) imported in the app.
 */
@Module({})
export class IdempotencyAdminModule {
  /** The admin API (and, with `console`, the operator's console) under `options.path`, behind `options.guards`. */
  static register(options: AdminModuleOptions = {}): DynamicModule {
    const { console: consoleOption, ...api } = options;
    const controllers: Type<unknown>[] = [createAdminController(api)];
    if (consoleOption) {
      const own = typeof consoleOption === 'object' ? consoleOption : {};
      controllers.push(
        createAdminConsoleController({ ...own, path: api.path, guards: api.guards }),
      );
    }
    return { module: IdempotencyAdminModule, controllers };
  }
}
