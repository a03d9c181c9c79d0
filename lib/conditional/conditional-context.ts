import { Injectable } from '@nestjs/common';
import { ClsServiceManager } from 'nestjs-cls';
import { CONDITIONAL_STATE } from './conditional.constants';
import type { Preconditions } from './preconditions';

/**
 * What `@ConditionalUpdate()` / `@ConditionalRead()` and ConditionalWriter share during one
 * request. One mutable object, stored in CLS and by request object (see `setRequestState`), so
 * that nested CLS contexts (which copy the parent's top-level values) still see the same state.
 * @internal
 */
export interface ConditionalState {
  preconditions: Preconditions;
  /** ETag of the representation the handler answers with (set by a write or read, or by hand). */
  etag?: string;
  /** The write created the resource (PUT with If-None-Match: *): the answer becomes 201. */
  created: boolean;
  /** A conditional write or check used the preconditions. */
  consumed: boolean;
}

/**
 * The state of each conditional request, by request object (Express's or Fastify's, as Nest hands
 * it to interceptors and parameter decorators). Not a property on the request: Express sets each
 * request's prototype, and V8 then builds a hidden class for every property added to it.
 */
const stateByRequest = new WeakMap<object, ConditionalState>();

/** @internal Remembers a conditional request's state. */
export function setRequestState(req: object, state: ConditionalState): void {
  stateByRequest.set(req, state);
}

/** @internal A conditional request's state, or undefined. */
export function requestState(req: object | undefined): ConditionalState | undefined {
  return req ? stateByRequest.get(req) : undefined;
}

/** @internal The state of the current request, or undefined outside a conditional endpoint. */
export function currentConditionalState(): ConditionalState | undefined {
  const cls = ClsServiceManager.getClsService();
  return cls.isActive()
    ? (cls.get(CONDITIONAL_STATE as any) as ConditionalState | undefined)
    : undefined;
}

/**
 * Injectable view of the current conditional request: its preconditions, and the ETag the
 * answer will carry (set it by hand when the handler does not use ConditionalWriter).
 */
@Injectable()
export class ConditionalContext {
  /** The request's If-Match / If-None-Match, or undefined outside `@ConditionalUpdate()` / `@ConditionalRead()`. */
  get preconditions(): Preconditions | undefined {
    return currentConditionalState()?.preconditions;
  }

  /** The ETag the answer will carry. */
  get etag(): string | undefined {
    return currentConditionalState()?.etag;
  }

  /** Sets the (quoted) ETag of the answer, e.g. `versionToETag('counter', row.version)`. */
  setETag(etag: string): void {
    const state = currentConditionalState();
    if (!state) {
      throw new Error(
        'ConditionalContext.setETag() was called outside a @ConditionalUpdate() / @ConditionalRead() request.',
      );
    }
    state.etag = etag;
  }

  /** Marks the preconditions as applied by the handler's own conditional statement. */
  markApplied(): void {
    const state = currentConditionalState();
    if (state) state.consumed = true;
  }
}
