// `nestjs-exactly-once/admin`: the admin API and its console (optional; mount them yourself).
export { IdempotencyAdminModule } from '../maintenance/admin.module';
export type { AdminModuleOptions } from '../maintenance/admin.module';
export { createAdminController, ADMIN_PROBLEM_TYPES } from '../maintenance/admin.controller';
export type { AdminControllerOptions } from '../maintenance/admin.controller';
export { AdminSameOriginGuard, defaultAdminPrincipal } from '../maintenance/admin-request.guard';
export type { AdminPrincipalResolver } from '../maintenance/admin-request.guard';
export { createAdminConsoleController } from '../maintenance/console/console.controller';
export type {
  AdminConsoleControllerOptions,
  AdminConsoleOptions,
} from '../maintenance/console/console.options';
export { CONSOLE_CSP } from '../maintenance/console/console.security';
