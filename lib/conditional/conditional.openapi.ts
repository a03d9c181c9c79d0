import type { ConditionalMetadata } from './conditional.interceptor';

/**
 * Swagger decorators for `@ConditionalUpdate()` / `@ConditionalRead()` when @nestjs/swagger is
 * installed (optional peer): the If-Match / If-None-Match parameters, the ETag response header
 * and the 304/400/412/428 answers. Without @nestjs/swagger this returns nothing.
 */
export function applyConditionalOpenApi(
  meta: ConditionalMetadata,
): Array<MethodDecorator & ClassDecorator> {
  let swagger: typeof import('@nestjs/swagger');
  try {
    swagger = require('@nestjs/swagger');
  } catch {
    return [];
  }
  const content = {
    'application/problem+json': {
      schema: {
        type: 'object',
        properties: {
          type: { type: 'string' },
          title: { type: 'string' },
          status: { type: 'integer' },
          detail: { type: 'string' },
        },
        required: ['type', 'title', 'status', 'detail'],
      },
    },
  };
  const decorators: any[] = [
    swagger.ApiHeader({
      name: 'If-Match',
      required: false,
      description:
        meta.kind === 'update'
          ? 'ETag of the version being changed (from a GET or an earlier write), or * for any existing version.'
          : 'Answer 412 unless the current ETag is one of these.',
    }),
    swagger.ApiHeader({
      name: 'If-None-Match',
      required: false,
      description:
        meta.kind === 'update'
          ? '* to create only if the resource does not exist.'
          : 'Answer 304 when the current ETag is one of these.',
    }),
    swagger.ApiResponse({
      status: 400,
      description: 'If-Match / If-None-Match malformed',
      content,
    }),
    swagger.ApiResponse({
      status: 412,
      description:
        'Precondition failed: the resource is not at the version the client named (nothing was written)',
      content,
    }),
  ];
  if (meta.kind === 'update' && meta.required) {
    decorators.push(
      swagger.ApiResponse({
        status: 428,
        description: 'Precondition required: send If-Match or If-None-Match: *',
        content,
      }),
    );
  }
  if (meta.kind === 'read') {
    decorators.push(
      swagger.ApiResponse({
        status: 304,
        description: 'Not modified (If-None-Match matched the current ETag)',
      }),
    );
  }
  return decorators as Array<MethodDecorator & ClassDecorator>;
}
