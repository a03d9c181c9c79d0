import type { CanActivate, Type } from '@nestjs/common';
import { ADMIN_CONSOLE_UNGUARDED } from '../maintenance.messages';

/** The operator's console (`console` of `IdempotencyAdminModule.register`). */
export interface AdminConsoleOptions {
  /**
   * Serve the console without a guard although NODE_ENV=production (something in front of the
   * app authenticates these routes). Default false: the app refuses to start.
   */
  allowUnguarded?: boolean;
  /** Seconds between two refreshes while live refresh is on. Default 5. */
  refreshSeconds?: number;
}

/** What the console controller is built from: the admin API's path and guards, and its own options. */
export interface AdminConsoleControllerOptions extends AdminConsoleOptions {
  /** The admin API's route prefix; the console is served at `<path>/console`. Default `admin`. */
  path?: string;
  /** The admin API's guards: the console is behind the same ones. */
  guards?: Array<Type<CanActivate> | CanActivate>;
}

/** Refuses an unguarded console in production unless told explicitly (the boot fails with the fix). */
export function assertConsoleGuarded(options: AdminConsoleControllerOptions): void {
  const guarded = (options.guards?.length ?? 0) > 0;
  if (!guarded && process.env.NODE_ENV === 'production' && options.allowUnguarded !== true) {
    throw new Error(ADMIN_CONSOLE_UNGUARDED);
  }
}
