import { Injectable, OnModuleInit } from '@nestjs/common';
import {
  RESPONSE_PASSTHROUGH_METADATA,
  ROUTE_ARGS_METADATA,
  SSE_METADATA,
} from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { Reflector } from '@nestjs/core';
import { IDEMPOTENT_METADATA } from '../idempotency.constants';
import { DiscoveredMethods } from '../internal/instance-methods';
import { EVENT_HANDLER, PATTERN_HANDLER_METADATA, PATTERN_METADATA } from '../rpc/rpc.constants';
import {
  IDEMPOTENT_ON_EVENT,
  KEY_FROM_ON_HTTP_ROUTE,
  RESPONSE_PASSTHROUGH,
} from './idempotency.messages';

/**
 * Fails bootstrap with a clear message when an `@Idempotent()` handler cannot have its answer
 * stored: it writes to the raw response (`@Res()` without passthrough) or streams (`@Sse()`); is
 * an `@EventPattern()` (no reply: the inbox's job); or is an HTTP route given `keyFrom`.
 * @internal
 */
@Injectable()
export class IdempotentRoutesExplorer implements OnModuleInit {
  constructor(
    private readonly methods: DiscoveredMethods,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    for (const { metatype, name, handler } of this.methods.ofControllers()) {
      const guarded =
        this.reflector.get(IDEMPOTENT_METADATA, metatype) !== undefined ||
        this.reflector.get(IDEMPOTENT_METADATA, handler) !== undefined;
      if (!guarded) continue;
      const where = `${metatype.name}.${name}()`;
      if (Reflect.getMetadata(PATTERN_METADATA, handler) !== undefined) {
        // A class-wide @Idempotent() leaves its event handlers alone (the RPC adapter passes them).
        const own = this.reflector.get(IDEMPOTENT_METADATA, handler) !== undefined;
        if (own && Reflect.getMetadata(PATTERN_HANDLER_METADATA, handler) === EVENT_HANDLER) {
          throw new Error(IDEMPOTENT_ON_EVENT(where));
        }
        continue;
      }
      if (this.reflector.get(IDEMPOTENT_METADATA, handler)?.keyFrom) {
        throw new Error(KEY_FROM_ON_HTTP_ROUTE(where));
      }
      if (Reflect.getMetadata(SSE_METADATA, handler)) {
        throw new Error(RESPONSE_PASSTHROUGH(where));
      }
      const args: Record<string, unknown> =
        Reflect.getMetadata(ROUTE_ARGS_METADATA, metatype, name) ?? {};
      const usesRes = Object.keys(args).some(
        (k) => k.split(':')[0] === String(RouteParamtypes.RESPONSE),
      );
      const passthrough = Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, metatype, name);
      if (usesRes && !passthrough) throw new Error(RESPONSE_PASSTHROUGH(where));
    }
  }
}
