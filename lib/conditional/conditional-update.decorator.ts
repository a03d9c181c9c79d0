import { applyDecorators, SetMetadata, UseFilters, UseInterceptors } from '@nestjs/common';
import { IdempotencyExceptionFilter } from '../gate/idempotency-exception.filter';
import { CONDITIONAL_METADATA } from './conditional.constants';
import { ConditionalInterceptor } from './conditional.interceptor';
import type { ConditionalMetadata, ConditionalUpdateOptions } from './conditional.interceptor';
import { applyConditionalOpenApi } from './conditional.openapi';

/**
 * Makes a PUT, PATCH or DELETE endpoint (or every endpoint of a controller) a conditional
 * write under RFC 9110 §13: the client sends `If-Match: "<etag>"` (or `*`) to change the version
 * it read, or `If-None-Match: *` to create. Without either the answer is 428 (unless
 * `required: false`); malformed headers get 400. Write through ConditionalWriter, which applies
 * the preconditions in the same statement as the write (stale ETag → 412, nothing written);
 * the answer then carries the new `ETag`, and 201 when the write created the resource.
 */
export function ConditionalUpdate(
  options: ConditionalUpdateOptions = {},
): MethodDecorator & ClassDecorator {
  const meta: ConditionalMetadata = { kind: 'update', required: options.required ?? true };
  return applyDecorators(
    SetMetadata(CONDITIONAL_METADATA, meta),
    UseInterceptors(ConditionalInterceptor),
    UseFilters(IdempotencyExceptionFilter),
    ...applyConditionalOpenApi(meta),
  );
}
