import type { InboxService } from './inbox.service';

/**
 * The running InboxService, for `@IdempotentConsumer()` method wrappers, which are called by
 * whoever calls the method (an event emitter, a microservice server, a test) and have no
 * injector of their own. Like nestjs-cls' `TransactionHost.getInstance()`: one app per process.
 * @internal
 */
let current: InboxService | undefined;

/** @internal */
export function registerInboxService(service: InboxService): void {
  current = service;
}

/** @internal */
export function unregisterInboxService(service: InboxService): void {
  if (current === service) current = undefined;
}

/** @internal */
export function runningInboxService(): InboxService | undefined {
  return current;
}
