import { createHash } from 'node:crypto';

/** Longest scope stored as text; longer ones are stored as their SHA-256. */
export const MAX_SCOPE_LENGTH = 400;

/**
 * The scope a key lives in: tenant + principal + HTTP method + resource path. Each part is
 * percent-encoded so that no choice of tenant or principal can imitate another's scope.
 */
export function buildScope(
  tenant: string,
  principal: string,
  method: string,
  route: string,
): string {
  const scope = `${encodeURIComponent(tenant)}|${encodeURIComponent(principal)}|${method.toUpperCase()} ${route}`;
  return scope.length <= MAX_SCOPE_LENGTH
    ? scope
    : `sha256:${createHash('sha256').update(scope).digest('hex')}`;
}

/** `METHOD /route` of a scope built by buildScope (for log lines), or the scope when hashed. */
export function routeOfScope(scope: string): string {
  const parts = scope.split('|');
  return parts.length < 3 ? scope : parts.slice(2).join('|');
}
