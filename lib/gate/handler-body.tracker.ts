import { AsyncLocalStorage } from 'node:async_hooks';
import { ClsServiceManager } from 'nestjs-cls';

/** Per-request flag: did the handler body itself start (after guards and pipes)? */
export interface HandlerBodyState {
  started: boolean;
}

/** Where the flag lives: the request's CLS context, which the gate always runs in. */
const IN_CLS = Symbol('nestjs-exactly-once:handler-body');
/**
 * Only without a CLS context. Not the usual path: every AsyncLocalStorage in use costs every
 * promise and async resource of the process a store of its own, and the gate's requests already
 * have nestjs-cls's.
 */
const fallback = new AsyncLocalStorage<HandlerBodyState>();

/** Runs `fn` with a fresh flag that the wrapped handler sets when its body starts. */
export function trackHandlerBody<T>(fn: () => T): { state: HandlerBodyState; result: T } {
  const state: HandlerBodyState = { started: false };
  const cls = ClsServiceManager.getClsService();
  // One guarded handler per request context: the flag is set in the current context (the gate's
  // transaction's), which the handler runs in or below.
  if (cls.isActive()) {
    cls.set(IN_CLS, state);
    return { state, result: fn() };
  }
  return { state, result: fallback.run(state, fn) };
}

function currentState(): HandlerBodyState | undefined {
  return (
    (ClsServiceManager.getClsService().get(IN_CLS) as HandlerBodyState | undefined) ??
    fallback.getStore()
  );
}

/**
 * Wraps a controller method so that the gate can tell a request rejected by a pipe (validation)
 * from one the handler itself answered: Nest runs pipes inside the interceptor chain, and Stripe's
 * rule (which this library follows) is that a request rejected before the handler runs stores
 * nothing. Metadata already attached to the method by other decorators is carried over.
 */
export function wrapHandlerBody(original: (...args: any[]) => any): (...args: any[]) => any {
  if ((original as any)[WRAPPED]) return original;
  const wrapped = function (this: unknown, ...args: any[]) {
    const state = currentState();
    if (state) state.started = true;
    return original.apply(this, args);
  };
  for (const key of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), wrapped);
  }
  Object.defineProperty(wrapped, 'name', { value: original.name });
  (wrapped as any)[WRAPPED] = true;
  return wrapped;
}

const WRAPPED = Symbol('nestjs-exactly-once:handler-body');

/** Method/class decorator applying wrapHandlerBody to one method or every method of a class. */
export function TrackHandlerBody(): MethodDecorator & ClassDecorator {
  return ((target: any, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor && typeof descriptor.value === 'function') {
      descriptor.value = wrapHandlerBody(descriptor.value);
      return descriptor;
    }
    if (typeof target === 'function') {
      const proto = target.prototype;
      for (const name of Object.getOwnPropertyNames(proto)) {
        if (name === 'constructor') continue;
        const d = Object.getOwnPropertyDescriptor(proto, name);
        if (d && typeof d.value === 'function') {
          Object.defineProperty(proto, name, { ...d, value: wrapHandlerBody(d.value) });
        }
      }
    }
    return undefined;
  }) as MethodDecorator & ClassDecorator;
}
