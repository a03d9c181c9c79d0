import { createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { ClsServiceManager } from 'nestjs-cls';

/** What the gate knows about the current guarded request. */
export interface IdempotencyInfo {
  /** The client's key, as parsed from the header. */
  key: string;
  /** Tenant + principal + method + resource path (route template with its parameters) the key is scoped to. */
  scope: string;
  /** Short SHA-256 of scope and key: safe to log. */
  keyHash: string;
}

/** @internal CLS key under which the gate stores IdempotencyInfo. */
export const IDEMPOTENCY_INFO = Symbol.for('nestjs-exactly-once:idempotency-info');

/**
 * The IdempotencyInfo of each guarded request, by request object (Express's or Fastify's, as
 * Nest hands it to interceptors and parameter decorators). Not a property on the request: adding
 * one to Express's request object costs more than the rest of a replay's key handling (seen in
 * CPU profiles).
 */
const infoByRequest = new WeakMap<object, IdempotencyInfo>();

/** @internal Remembers the guarded request's IdempotencyInfo. */
export function setRequestInfo(req: object, info: IdempotencyInfo): void {
  infoByRequest.set(req, info);
}

/** A stable key for a downstream system (payment provider), derived from scope, key and purpose. */
export function deriveKey(info: IdempotencyInfo, purpose = 'default'): string {
  return createHash('sha256')
    .update(`${info.scope}\u0000${info.key}\u0000${purpose}`)
    .digest('hex');
}

/**
 * The gate's IdempotencyInfo for a request. `keyHash` is computed on first use only: most requests
 * log nothing and call no hook, and a SHA-256 per request is wasted work on the hot path.
 */
export function idempotencyInfo(key: string, scope: string): IdempotencyInfo {
  let hash: string | undefined;
  return {
    key,
    scope,
    get keyHash() {
      return (hash ??= keyHashOf(scope, key));
    },
  };
}

/** A short hash of scope and key, the only form in which keys appear in logs. */
export function keyHashOf(scope: string, key: string): string {
  return createHash('sha256').update(`${scope}\u0000${key}`).digest('hex').slice(0, 16);
}

/**
 * Injectable view of the current request's idempotency key. Pass `derivedKey('charge')` to a
 * payment provider that takes its own idempotency key: a retry of the same request derives the
 * same value, so the provider de-duplicates the external effect the database cannot roll back.
 */
@Injectable()
export class IdempotencyContext {
  /** The current guarded request's info, or undefined outside one. */
  get current(): IdempotencyInfo | undefined {
    const cls = ClsServiceManager.getClsService();
    return cls.isActive()
      ? (cls.get(IDEMPOTENCY_INFO as any) as IdempotencyInfo | undefined)
      : undefined;
  }

  /** The current request's idempotency key as the client sent it; undefined outside a guarded handler. */
  get key(): string | undefined {
    return this.current?.key;
  }

  /** A stable key for a downstream call; throws outside a guarded request. */
  derivedKey(purpose = 'default'): string {
    const info = this.current;
    if (!info) {
      throw new Error(
        'IdempotencyContext.derivedKey() was called outside an @Idempotent() request.',
      );
    }
    return deriveKey(info, purpose);
  }
}

/** Parameter decorator: the current request's IdempotencyInfo (undefined when the key was optional and absent). */
export const IdempotencyKey = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): IdempotencyInfo | undefined => {
    const req = ctx.switchToHttp().getRequest();
    return req && typeof req === 'object' ? infoByRequest.get(req) : undefined;
  },
);
