import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { headerValues } from '../internal/http-platform';
import { requestState } from './conditional-context';
import { MAX_ENTITY_TAGS } from './conditional.constants';
import { invalidPreconditionHeader } from './conditional.errors';
import {
  type EntityTagCondition,
  EntityTagSyntaxError,
  parseEntityTagCondition,
} from './entity-tag';

/** The preconditions of a request (RFC 9110 §13.1): absent headers are undefined. */
export interface Preconditions {
  /** `If-Match`: `*` (the resource must exist) or the entity tags one of which the current version must have. */
  ifMatch?: EntityTagCondition;
  /** `If-None-Match`: `*` (the resource must not exist) or entity tags the current version must not have. */
  ifNoneMatch?: EntityTagCondition;
}

/** Reads If-Match and If-None-Match from an Express or Fastify request; malformed → 400 problem. */
export function readPreconditions(req: any): Preconditions {
  return {
    ifMatch: parseHeader(req, 'If-Match'),
    ifNoneMatch: parseHeader(req, 'If-None-Match'),
  };
}

function parseHeader(req: any, name: string): EntityTagCondition | undefined {
  try {
    return parseEntityTagCondition(headerValues(req, name), MAX_ENTITY_TAGS);
  } catch (e) {
    if (e instanceof EntityTagSyntaxError) throw invalidPreconditionHeader(name, e.message);
    throw e;
  }
}

/** True when the request carries any precondition. */
export const hasPreconditions = (p: Preconditions): boolean =>
  p.ifMatch !== undefined || p.ifNoneMatch !== undefined;

/**
 * Parameter decorator: the request's parsed If-Match / If-None-Match (`{}` when neither was
 * sent), under `@ConditionalUpdate()` or `@ConditionalRead()`.
 */
export const Preconditions = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): Preconditions => {
    const req = ctx.switchToHttp().getRequest();
    return requestState(req)?.preconditions ?? {};
  },
);
