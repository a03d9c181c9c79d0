import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IDEMPOTENT_METADATA } from '../idempotency.constants';
import { DiscoveredMethods } from '../internal/instance-methods';
import type { IdempotencyEndpointOptions } from '../idempotency.options';
import { IDEMPOTENT_ON_GRAPHQL_READ, KEY_RESOLVER_ON_GRAPHQL } from '../gate/idempotency.messages';
import {
  MUTATION_RESOLVER,
  QUERY_RESOLVER,
  RESOLVER_PROPERTY_METADATA,
  RESOLVER_TYPE_METADATA,
  SUBSCRIPTION_RESOLVER,
} from './graphql.constants';

/**
 * Fails bootstrap with a clear message when `@Idempotent()` is put on a GraphQL resolver that is
 * not a mutation (a `@Query()`, a `@Subscription()`, a `@ResolveField()`), or a mutation is given
 * `keyResolver` (HTTP's). A class-wide `@Idempotent()` on a resolver class guards its mutations
 * and leaves the rest alone. Reads `@nestjs/graphql`'s metadata by name: nothing is loaded.
 * @internal
 */
@Injectable()
export class IdempotentResolversExplorer implements OnModuleInit {
  constructor(
    private readonly methods: DiscoveredMethods,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    for (const { metatype, name, handler } of this.methods.ofProviders()) {
      const kind: unknown = Reflect.getMetadata(RESOLVER_TYPE_METADATA, handler);
      const fieldResolver = Reflect.getMetadata(RESOLVER_PROPERTY_METADATA, handler) === true;
      if (kind === undefined && !fieldResolver) continue;
      const own = this.reflector.get<IdempotencyEndpointOptions | undefined>(
        IDEMPOTENT_METADATA,
        handler,
      );
      const where = `${metatype.name}.${name}()`;
      const isMutation = kind === MUTATION_RESOLVER && !fieldResolver;
      if (own && !isMutation) {
        throw new Error(
          IDEMPOTENT_ON_GRAPHQL_READ(
            where,
            kind === QUERY_RESOLVER
              ? 'query (@Query())'
              : kind === SUBSCRIPTION_RESOLVER
                ? 'subscription (@Subscription())'
                : 'field resolver (@ResolveField())',
          ),
        );
      }
      const classOptions = this.reflector.get<IdempotencyEndpointOptions | undefined>(
        IDEMPOTENT_METADATA,
        metatype,
      );
      if (isMutation && (own ?? classOptions)?.keyResolver) {
        throw new Error(KEY_RESOLVER_ON_GRAPHQL(where));
      }
    }
  }
}
