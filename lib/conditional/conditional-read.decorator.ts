import { applyDecorators, SetMetadata, UseFilters, UseInterceptors } from '@nestjs/common';
import { IdempotencyExceptionFilter } from '../gate/idempotency-exception.filter';
import { CONDITIONAL_METADATA } from './conditional.constants';
import { ConditionalInterceptor } from './conditional.interceptor';
import type { ConditionalMetadata } from './conditional.interceptor';
import { applyConditionalOpenApi } from './conditional.openapi';

/**
 * Makes a GET endpoint answer with the `ETag` of what it returns: load the entity with
 * `ConditionalWriter.find()` (or call `ConditionalContext.setETag()`). The same ETag is what a
 * later `If-Match` must carry. `If-None-Match` with the current ETag gets 304 Not Modified,
 * `If-Match` with another one 412.
 */
export function ConditionalRead(): MethodDecorator & ClassDecorator {
  const meta: ConditionalMetadata = { kind: 'read', required: false };
  return applyDecorators(
    SetMetadata(CONDITIONAL_METADATA, meta),
    UseInterceptors(ConditionalInterceptor),
    UseFilters(IdempotencyExceptionFilter),
    ...applyConditionalOpenApi(meta),
  );
}
