import { DynamicModule, Module } from '@nestjs/common';
import type { AdminControllerOptions } from './admin.controller';
import { createAdminController } from './admin.controller';

/**
 * The optional HTTP admin API over `IdempotencyAdminService` (outbox listing, re-queue, purge;
 * idempotency key inspection and eviction). Not mounted unless the app imports it:
 * `IdempotencyAdminModule.register({ path: 'admin', guards: [AdminGuard] })`. Needs
 * `IdempotencyModule` (global) imported in the app.
 */
@Module({})
export class IdempotencyAdminModule {
  static register(options: AdminControllerOptions = {}): DynamicModule {
    return { module: IdempotencyAdminModule, controllers: [createAdminController(options)] };
  }
}
