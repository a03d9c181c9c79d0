import { HttpStatus, RequestMethod } from '@nestjs/common';
import { HTTP_CODE_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { REPLAYED_HEADER } from '../idempotency.constants';
import type { IdempotencyEndpointOptions } from '../idempotency.options';

type Swagger = typeof import('@nestjs/swagger');
type AnyDecorator = MethodDecorator & ClassDecorator;
/** A route handler or a controller class, as decorators receive them. */
type Fn = (...args: any[]) => unknown;

/** Metadata key under which @nestjs/swagger keeps `@ApiResponse()` entries (its DECORATORS.API_RESPONSE). */
const API_RESPONSE = 'swagger/apiResponse';
/** Name of the problem+json schema in `components.schemas`. */
export const PROBLEM_SCHEMA_NAME = 'IdempotencyProblemDetails';
const BODY_OMITTED_HEADER = 'Idempotency-Replay-Body-Omitted';

let swaggerModule: Swagger | null | undefined;
function loadSwagger(): Swagger | null {
  if (swaggerModule === undefined) {
    try {
      swaggerModule = require('@nestjs/swagger') as Swagger;
    } catch {
      swaggerModule = null;
    }
  }
  return swaggerModule;
}

let problemModel: (new () => object) | undefined;
/** The RFC 9457 problem details model, registered as a schema component through `@ApiExtraModels()`. */
function problemDetailsModel(swagger: Swagger): new () => object {
  if (problemModel) return problemModel;
  const model = class {};
  Object.defineProperty(model, 'name', { value: PROBLEM_SCHEMA_NAME });
  const prop = (name: string, options: Record<string, unknown>) =>
    swagger.ApiProperty(options as any)(model.prototype, name);
  prop('type', {
    type: String,
    format: 'uri-reference',
    description: 'URI identifying the problem type',
    example: 'urn:nestjs-exactly-once:problem:idempotency-request-in-progress',
  });
  prop('title', {
    type: String,
    description: 'Short, human-readable summary of the problem type',
    example: 'Request in progress',
  });
  prop('status', { type: Number, description: 'HTTP status code of this answer', example: 409 });
  prop('detail', { type: String, description: 'Explanation specific to this occurrence' });
  problemModel = model;
  return model;
}

/**
 * OpenAPI documentation of `@Idempotent()` when @nestjs/swagger is installed (optional peer):
 * - the key header parameter (`required` as the endpoint option says; default true),
 * - 400 / 409 / 422 (or the configured mismatch status) responses with `application/problem+json`
 *   bodies that reference the `IdempotencyProblemDetails` schema component, `Retry-After` on 409,
 * - the `Idempotency-Replayed` response header on every success (2xx) response of the operation.
 *
 * Responses are merged once the class is fully decorated (a microtask after the decorator runs),
 * because `@Post()`, `@HttpCode()` and the app's own `@ApiResponse()` decorators may be applied
 * before or after `@Idempotent()`: the app's own entries win, ours fill in what is missing, and the
 * default success response swagger would otherwise derive is kept. Without @nestjs/swagger this
 * returns nothing.
 */
export function applyOpenApi(options: IdempotencyEndpointOptions): AnyDecorator[] {
  const swagger = loadSwagger();
  if (!swagger) return [];
  const header = options.headerName ?? 'Idempotency-Key';
  const required = options.required ?? true;
  return [
    swagger.ApiExtraModels(problemDetailsModel(swagger)) as AnyDecorator,
    swagger.ApiHeader({
      name: header,
      required,
      description:
        `Unique key for this request (1-${options.maxKeyLength ?? 255} visible ASCII characters, bare or as a quoted ` +
        'structured-field string). Retrying with the same key and the same request returns the original answer.',
      schema: { type: 'string', minLength: 1, maxLength: options.maxKeyLength ?? 255 },
    }) as AnyDecorator,
    documentResponses(swagger, options, header, required),
  ];
}

function documentResponses(
  swagger: Swagger,
  options: IdempotencyEndpointOptions,
  header: string,
  required: boolean,
): AnyDecorator {
  return ((target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const handlers = (): Fn[] => {
      if (descriptor?.value) return [descriptor.value];
      const proto = (target as Fn).prototype;
      if (!proto) return [];
      return Object.getOwnPropertyNames(proto)
        .filter((name) => name !== 'constructor')
        .map((name) => Object.getOwnPropertyDescriptor(proto, name)?.value)
        .filter(
          (fn): fn is Fn =>
            typeof fn === 'function' && Reflect.getMetadata(METHOD_METADATA, fn) !== undefined,
        );
    };
    // Let every other decorator of the class run first (they are applied synchronously).
    queueMicrotask(() => {
      for (const handler of handlers()) mergeResponses(handler, swagger, options, header, required);
    });
    return descriptor ?? target;
  }) as AnyDecorator;
}

function mergeResponses(
  handler: Fn,
  swagger: Swagger,
  options: IdempotencyEndpointOptions,
  header: string,
  required: boolean,
): void {
  const existing: Record<string, any> = { ...(Reflect.getMetadata(API_RESPONSE, handler) ?? {}) };
  const schema = { $ref: swagger.getSchemaPath(PROBLEM_SCHEMA_NAME) };
  const problem = { 'application/problem+json': { schema } };
  const ours: Record<string, any> = {};
  const add = (status: number, description: string, headers?: Record<string, unknown>) => {
    const k = String(status);
    if (ours[k]) ours[k] = { ...ours[k], description: `${ours[k].description} / ${description}` };
    else ours[k] = { description, content: problem, ...(headers ? { headers } : {}) };
  };
  add(HttpStatus.BAD_REQUEST, required ? `${header} missing or invalid` : `${header} invalid`);
  add(
    HttpStatus.CONFLICT,
    'A request with this key is still in progress; retry after Retry-After seconds with the same key',
    {
      'Retry-After': {
        description: 'Seconds to wait before retrying with the same key',
        schema: { type: 'integer', minimum: 1 },
      },
    },
  );
  add(
    options.mismatchStatus ?? HttpStatus.UNPROCESSABLE_ENTITY,
    'The key was already used with a different request',
  );
  for (const [status, entry] of Object.entries(ours)) {
    if (existing[status] === undefined) existing[status] = entry;
  }

  const replayHeaders: Record<string, unknown> = {
    [options.replayedHeaderName ?? REPLAYED_HEADER]: {
      description:
        'Present with the value "true" when this answer is a stored replay of the first execution for this key.',
      schema: { type: 'string', enum: ['true'] },
    },
  };
  if (options.statusHeader) {
    replayHeaders[options.statusHeader === true ? 'Idempotency-Status' : options.statusHeader] = {
      description:
        '"created" on the first execution\'s stored answer, "replayed" on a replay of it.',
      schema: { type: 'string', enum: ['created', 'replayed'] },
    };
  }
  if (options.oversizedResponse === 'store-status-only') {
    replayHeaders[BODY_OMITTED_HEADER] = {
      description:
        'Present with the value "true" on a replay whose body was too large to store (the body is empty).',
      schema: { type: 'string', enum: ['true'] },
    };
  }
  const successes = Object.keys(existing).filter((s) => /^2\d\d$/.test(s));
  if (successes.length === 0) {
    // Declaring any response stops swagger from deriving the default one: declare it here.
    const status = String(
      Reflect.getMetadata(HTTP_CODE_METADATA, handler) ?? defaultStatus(handler),
    );
    existing[status] = { description: '' };
    successes.push(status);
  }
  for (const status of successes) {
    const entry = existing[status];
    existing[status] = { ...entry, headers: { ...replayHeaders, ...(entry.headers ?? {}) } };
  }
  Reflect.defineMetadata(API_RESPONSE, existing, handler);
}

function defaultStatus(handler: Fn): number {
  return Reflect.getMetadata(METHOD_METADATA, handler) === RequestMethod.POST
    ? HttpStatus.CREATED
    : HttpStatus.OK;
}
