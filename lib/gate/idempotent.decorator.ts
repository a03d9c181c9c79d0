import { applyDecorators, SetMetadata, UseFilters, UseInterceptors } from '@nestjs/common';
import { IDEMPOTENT_METADATA } from '../idempotency.constants';
import type { IdempotencyEndpointOptions } from '../idempotency.options';
import { IdempotencyExceptionFilter } from './idempotency-exception.filter';
import { IdempotentRouteInterceptor } from './idempotent-route.interceptor';
import { applyOpenApi } from './idempotent.openapi';
import { TrackHandlerBody } from './handler-body.tracker';

/**
 * Makes a command endpoint (or every endpoint of a controller) idempotent under the
 * `Idempotency-Key` header: the first request runs once, retries with the same key get the
 * stored answer, concurrent duplicates get 409, reuse with another payload gets 422.
 * Options override the module's for this endpoint. The type parameter types the request that
 * `keyResolver`, `skip`, `fingerprint` and `onEvent` receive:
 * `@Idempotent<Request>({ keyResolver: (req) => req.body.eventId })`.
 */
export function Idempotent<TRequest = any>(
  options: IdempotencyEndpointOptions<TRequest> = {},
): MethodDecorator & ClassDecorator {
  return applyDecorators(
    TrackHandlerBody(),
    SetMetadata(IDEMPOTENT_METADATA, options),
    UseInterceptors(IdempotentRouteInterceptor),
    UseFilters(IdempotencyExceptionFilter),
    ...applyOpenApi(options),
  );
}
