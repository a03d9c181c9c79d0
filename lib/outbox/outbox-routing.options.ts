import type { OutboxEvent } from './outbox-message.interface';
import type { OutboxPublisher } from './outbox-publisher.interface';
import {
  ROUTE_FUNCTION_MISSING,
  ROUTE_FUNCTION_NOT_A_FUNCTION,
  ROUTE_NAME_INVALID,
  ROUTE_WITHOUT_PUBLISHERS,
  DEFAULT_PUBLISHER_TWICE,
  PUBLISHER_INVALID,
} from './outbox.messages';

/** The name of the publisher given by the `outbox.publisher` option (or the `OutboxPublisher` provider). */
export const DEFAULT_ROUTE = 'default';

/** A publisher's name: what the outbox stores in its `route` column. */
export const ROUTE_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Named publishers and the route of each message (part of `outbox` in the module options).
 *
 * ```ts
 * outbox: {
 *   publishers: { payments: new ClientProxyPublisher(rmq), audit: new KafkaPublisher({ … }) },
 *   route: (event) => (event.type.startsWith('audit.') ? 'audit' : 'payments'),
 * }
 * ```
 *
 * The route is resolved by `OutboxService.add()` and stored with the message: a retry, a relay
 * restarted with other options, or a requeue sends it to the publisher it was routed to when it
 * was added.
 */
export interface OutboxRoutingOptions {
  /**
   * Publishers by name (letters, digits, `.`, `_`, `-`; at most 64 characters). The
   * `outbox.publisher` option, when set too, is the one named `default`.
   */
  publishers?: Record<string, OutboxPublisher>;
  /**
   * The name of the publisher an event goes to, called once by `OutboxService.add()` for each
   * event. Required when there are several publishers. A name that is not a configured publisher
   * (or a throw) fails the `add()` call with `OutboxRouteError`: nothing of the call is written.
   * Default: the only publisher (named `default` when it is the `outbox.publisher` option).
   */
  route?: (event: OutboxEvent) => string;
}

/** How `OutboxService.add()` routes events, from the options. @internal */
export interface OutboxRouting {
  /** Every configured name (empty: no publisher configured in this process). */
  readonly names: ReadonlySet<string>;
  /** The route when there is no route function. */
  readonly fixed: string;
  readonly route?: (event: OutboxEvent) => string;
}

/** The names of the configured publishers, `default` first when the `publisher` option is set. @internal */
export function outboxRouting(o: {
  publisher?: OutboxPublisher;
  publishers?: Record<string, OutboxPublisher>;
  route?: (event: OutboxEvent) => string;
}): OutboxRouting {
  const names = new Set<string>();
  if (o.publisher) names.add(DEFAULT_ROUTE);
  for (const name of Object.keys(o.publishers ?? {})) names.add(name);
  const fixed = !o.route && names.size === 1 ? [...names][0]! : DEFAULT_ROUTE;
  return { names, fixed, route: o.route };
}

/** Checks the routing options (every wiring mistake fails at boot naming the fix). @internal */
export function validateOutboxRouting(
  o: OutboxRoutingOptions & { publisher?: OutboxPublisher },
  fail: (msg: string) => void,
): void {
  const named = o.publishers;
  if (named !== undefined) {
    if (named === null || typeof named !== 'object' || Array.isArray(named)) {
      fail('outbox.publishers must be an object of publishers by name');
    }
    for (const [name, publisher] of Object.entries(named)) {
      if (!ROUTE_NAME.test(name)) fail(ROUTE_NAME_INVALID(name));
      if (!isPublisher(publisher)) fail(PUBLISHER_INVALID(`outbox.publishers.${name}`));
    }
    if (o.publisher && Object.prototype.hasOwnProperty.call(named, DEFAULT_ROUTE)) {
      fail(DEFAULT_PUBLISHER_TWICE);
    }
  }
  if (o.publisher !== undefined && !isPublisher(o.publisher)) {
    fail(PUBLISHER_INVALID('outbox.publisher'));
  }
  if (o.route !== undefined && typeof o.route !== 'function') fail(ROUTE_FUNCTION_NOT_A_FUNCTION);
  const names = outboxRouting(o).names;
  if (o.route && names.size === 0) fail(ROUTE_WITHOUT_PUBLISHERS);
  if (!o.route && names.size > 1) fail(ROUTE_FUNCTION_MISSING([...names]));
}

function isPublisher(p: unknown): p is OutboxPublisher {
  return (
    !!p &&
    typeof p === 'object' &&
    typeof (p as OutboxPublisher).publish === 'function' &&
    ((p as OutboxPublisher).publishBatch === undefined ||
      typeof (p as OutboxPublisher).publishBatch === 'function')
  );
}
