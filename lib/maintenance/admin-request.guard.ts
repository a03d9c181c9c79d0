import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { problem, PROBLEM_TYPES } from '../problem-details';
import { ADMIN_CROSS_SITE } from './maintenance.messages';

type Headers = Record<string, string | string[] | undefined>;

const header = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * The origin of a browser request that came from another site, or undefined when it did not.
 * Browsers say where a request comes from: `Sec-Fetch-Site` (all current browsers) must be
 * `same-origin` or `none` (typed in, bookmarked); failing that header, `Origin` (sent with every
 * cross-origin POST/DELETE, `null` from sandboxed or privacy-redirected contexts) must name this
 * host (the `Host` header, or `X-Forwarded-Host` behind a proxy) or a trusted origin. Requests with
 * neither header (curl, scripts, server-to-server) are not browser requests and pass.
 */
export function crossSiteOrigin(
  headers: Headers,
  trustedOrigins: readonly string[],
): string | undefined {
  const origin = header(headers, 'origin');
  if (origin !== undefined && trustedOrigins.includes(origin)) return undefined;
  const site = header(headers, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return origin ?? site;
  if (origin === undefined) return undefined;
  const host = header(headers, 'x-forwarded-host')?.split(',')[0].trim() ?? header(headers, 'host');
  try {
    if (origin !== 'null' && host !== undefined && new URL(origin).host === host) return undefined;
  } catch {
    // not a URL: refused below
  }
  return origin;
}

/**
 * Refuses (403 problem+json) an admin action (POST, DELETE) sent by a browser from another site:
 * a cross-site form or script cannot act with the operator's cookies or HTTP credentials.
 * `protected` hooks for subclasses.
 */
export class AdminSameOriginGuard implements CanActivate {
  constructor(protected readonly trustedOrigins: readonly string[] = []) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Headers }>();
    const origin = crossSiteOrigin(req.headers ?? {}, this.trustedOrigins);
    if (origin !== undefined) {
      throw problem(
        403,
        PROBLEM_TYPES.adminCrossSite,
        'Cross-site request refused',
        ADMIN_CROSS_SITE(origin),
      );
    }
    return true;
  }
}

/** What the guards left on the request about who is asking. */
export type AdminPrincipalResolver = (request: any) => string | undefined;

/**
 * The operator's principal for the log: `request.user` as an authentication guard (Passport and
 * most others) leaves it, a string or the first of its `id`, `sub`, `username`, `name`, `email`.
 */
export const defaultAdminPrincipal: AdminPrincipalResolver = (request) => {
  const user = request?.user;
  if (typeof user === 'string') return user;
  if (user && typeof user === 'object') {
    for (const field of ['id', 'sub', 'username', 'name', 'email']) {
      const v = (user as Record<string, unknown>)[field];
      if (typeof v === 'string' || typeof v === 'number') return String(v);
    }
  }
  return undefined;
};
