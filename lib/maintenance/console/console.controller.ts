import { applyDecorators, Controller, Get, Header, Req, Type, UseGuards } from '@nestjs/common';
import { assertConsoleGuarded, type AdminConsoleControllerOptions } from './console.options';
import { consolePage } from './console.page';
import { CONSOLE_SCRIPT } from './console.script';
import { CONSOLE_HEADERS } from './console.security';
import { CONSOLE_STYLES } from './console.styles';

/** The console's security headers and the given content type. */
const Served = (contentType: string) =>
  applyDecorators(
    Header('Content-Type', contentType),
    ...Object.entries(CONSOLE_HEADERS).map(([name, value]) => Header(name, value)),
  );

/** The path the page was asked for, without query or trailing slash (global prefixes included). */
function pagePath(req: { originalUrl?: string; url?: string }): string {
  const url = req.originalUrl ?? req.url ?? '/console';
  return url.split('?')[0].replace(/\/+$/, '');
}

/**
 * Builds the controller of the operator's console, served under the admin API's path and guards:
 * - `GET <path>/console` the page (HTML)
 * - `GET <path>/console/console.js`, `GET <path>/console/console.css` its script and style
 * Plain HTML, CSS and JavaScript shipped in the package (no build step, no other host), under a
 * strict Content-Security-Policy. The page reads and acts through the admin API beside it.
 * Without guards and with NODE_ENV=production it throws (the app does not start) unless
 * `allowUnguarded` is set.
 */
export function createAdminConsoleController(
  options: AdminConsoleControllerOptions = {},
): Type<unknown> {
  assertConsoleGuarded(options);
  const refreshSeconds = Math.max(1, Math.floor(options.refreshSeconds ?? 5));

  @Controller(options.path ?? 'admin')
  @UseGuards(...(options.guards ?? []))
  class IdempotencyAdminConsoleController {
    @Get('console')
    @Served('text/html; charset=utf-8')
    page(@Req() req: { originalUrl?: string; url?: string }): string {
      return consolePage(pagePath(req), refreshSeconds);
    }

    @Get('console/console.js')
    @Served('text/javascript; charset=utf-8')
    script(): string {
      return CONSOLE_SCRIPT;
    }

    @Get('console/console.css')
    @Served('text/css; charset=utf-8')
    styles(): string {
      return CONSOLE_STYLES;
    }
  }
  return IdempotencyAdminConsoleController;
}
