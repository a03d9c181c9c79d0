/**
 * `@nestjs/graphql`'s metadata keys and resolver kinds, read by value: `@nestjs/graphql` is an
 * optional peer, loaded only by apps that use GraphQL.
 */
export const RESOLVER_TYPE_METADATA = 'graphql:resolver_type';
/** Set (true) on a field resolver (`@ResolveField()`). */
export const RESOLVER_PROPERTY_METADATA = 'graphql:resolve_property';
/** `Resolver.MUTATION` of `@nestjs/graphql`: a handler declared with `@Mutation()`. */
export const MUTATION_RESOLVER = 'Mutation';
/** `Resolver.QUERY` / `Resolver.SUBSCRIPTION`: refused under `@Idempotent()`. */
export const QUERY_RESOLVER = 'Query';
export const SUBSCRIPTION_RESOLVER = 'Subscription';

/** `extensions.code` of the gate's GraphQL errors. */
export const GRAPHQL_ERROR_CODES = {
  keyMissing: 'IDEMPOTENCY_KEY_REQUIRED',
  keyInvalid: 'IDEMPOTENCY_KEY_INVALID',
  inProgress: 'IDEMPOTENCY_KEY_IN_USE',
  mismatch: 'IDEMPOTENCY_KEY_REUSED',
  leaseLost: 'IDEMPOTENCY_REQUEST_SUPERSEDED',
  unavailable: 'SERVICE_UNAVAILABLE',
  /** Every other problem of the gate (misconfigured, a reply that cannot be stored or read). */
  internal: 'INTERNAL_SERVER_ERROR',
} as const;
