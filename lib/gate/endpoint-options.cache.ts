import type { ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';
import { IDEMPOTENT_METADATA } from '../idempotency.constants';
import type {
  IdempotencyEndpointOptions,
  ResolvedEndpointOptions,
  ResolvedIdempotencyOptions,
} from '../idempotency.options';
import { resolveEndpointOptions } from '../idempotency-options.resolver';
import type { FingerprintOptions } from './gate.options';
import {
  customFingerprint,
  type FingerprintInput,
  NO_FINGERPRINT,
  requestFingerprint,
} from './request-fingerprint';

/** What a context's gate reads of its request for the default fingerprint. */
export type FingerprintParts = Omit<FingerprintInput, 'excludeBodyPaths' | 'includeBodyPaths'>;

/**
 * An endpoint's options (`@Idempotent()` on the handler or its class, over the module's), resolved
 * once per handler, and the fingerprint's excluded body paths as a set, built once per options
 * object: what every context's gate (HTTP, RPC) reads on each call without resolving it again.
 * @internal
 */
export class EndpointOptionsCache {
  private readonly resolved = new WeakMap<object, ResolvedEndpointOptions>();
  private readonly excluded = new WeakMap<object, ReadonlySet<string>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly options: ResolvedIdempotencyOptions,
  ) {}

  /** The options of the handler `context` runs. */
  of(context: ExecutionContext): ResolvedEndpointOptions {
    const handler = context.getHandler();
    let resolved = this.resolved.get(handler);
    if (!resolved) {
      const overrides = this.reflector.getAllAndOverride<IdempotencyEndpointOptions | undefined>(
        IDEMPOTENT_METADATA,
        [handler, context.getClass()],
      );
      resolved = resolveEndpointOptions(this.options, overrides);
      this.resolved.set(handler, resolved);
    }
    return resolved;
  }

  /** `excludeBodyPaths` of a fingerprint's options, as a set. */
  excludedPathsOf(f: { excludeBodyPaths: string[] }): ReadonlySet<string> {
    let s = this.excluded.get(f);
    if (!s) {
      s = new Set(f.excludeBodyPaths);
      this.excluded.set(f, s);
    }
    return s;
  }

  /**
   * The fingerprint of a call under the endpoint's `fingerprint` option: none (`false`), the
   * app's function of the request, or the request's `parts` with the option's body paths.
   */
  fingerprint(
    opts: ResolvedEndpointOptions,
    request: unknown,
    parts: (f: Required<FingerprintOptions>) => FingerprintParts,
  ): Buffer {
    const f = opts.fingerprint;
    if (f === false) return NO_FINGERPRINT;
    if (typeof f === 'function') return customFingerprint(f(request));
    return requestFingerprint({
      ...parts(f),
      excludeBodyPaths: this.excludedPathsOf(f),
      includeBodyPaths: f.includeBodyPaths,
    });
  }
}
