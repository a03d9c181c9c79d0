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
  return bounded(
    `${encodeURIComponent(tenant)}|${encodeURIComponent(principal)}|${method.toUpperCase()} ${route}`,
  );
}

const bounded = (scope: string): string =>
  scope.length <= MAX_SCOPE_LENGTH
    ? scope
    : `sha256:${createHash('sha256').update(scope).digest('hex')}`;

/** `METHOD /route` of a scope built by buildScope (for log lines), or the scope when hashed. */
export function routeOfScope(scope: string): string {
  const parts = scope.split('|');
  return parts.length < 3 ? scope : parts.slice(2).join('|');
}

/**
 * The scope of a call from a context other than HTTP: tenant + principal + `<context>:<subject>`
 * (`rpc:payments.create`, `graphql:createPayment`). An HTTP scope's third part is `METHOD route`, and an HTTP method
 * cannot contain `:`, so no HTTP request shares a scope (and a record) with another context.
 */
export function buildContextScope(
  tenant: string,
  principal: string,
  context: 'rpc' | 'graphql',
  subject: string,
): string {
  return bounded(
    `${encodeURIComponent(tenant)}|${encodeURIComponent(principal)}|${context}:${subject}`,
  );
}
