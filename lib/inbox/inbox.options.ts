import { stripUndefined } from '../internal/strip-undefined';
import {
  defaultStrayWrites,
  isStrayWritesPolicy,
  type StrayWritesPolicy,
} from '../persistence/stray-writes.options';
import { inboxBackoffProblem } from './inbox-backoff';

/*
 * The inbox's options (`inbox: {…}` of the module): types, defaults and checks. Merged with the other features' options in
 * idempotency-options.resolver.ts (the one place where defaults are applied).
 */

/**
 * Who settles a RabbitMQ delivery of an `@IdempotentConsumer()` handler: `'auto'` (default) acks
 * it after the inbox transaction commits (processed, duplicate, recorded failed) and rejects it
 * when the handler failed, whenever the consuming server runs with `noAck: false`, and leaves it
 * alone under `noAck: true` (RabbitMQ acknowledged it on delivery); `true`: always (unless the
 * server is known to be `noAck: true`); `false`: never (the handler acks through its RmqContext).
 * Kafka: under `'auto'` and `true`, when the consuming `ServerKafka` runs with
 * `run: { autoCommit: false }`, the record's offset is committed once the inbox settled it;
 * under kafkajs' `autoCommit` kafkajs commits it once the handler resolved. `false`: the handler
 * commits itself. Other transports settle their messages themselves.
 */
export type InboxAcknowledge = 'auto' | boolean;

/** The inbox of `@IdempotentConsumer()` handlers (`inbox: {…}` of the module). */
export interface InboxOptions {
  /** Settling RabbitMQ deliveries (see {@link InboxAcknowledge}). Default `'auto'`. */
  acknowledge?: InboxAcknowledge;
  /** Failed attempts of one message id before it is recorded as failed. Default 5. */
  maxAttempts?: number;
  /** After `maxAttempts`: record the message as failed and acknowledge it (`ack`, default) or keep rethrowing (`rethrow`). */
  onMaxAttempts?: 'ack' | 'rethrow';
  /** Writes outside the consumer's transaction while it runs (see {@link StrayWritesPolicy}). Default: the module's `strayWrites`. */
  strayWrites?: StrayWritesPolicy;
  /**
   * Delay before a failed message runs again, in ms: `backoffBaseMs · 2^(failed attempts - 1)`
   * with jitter, capped at `backoffMaxMs`. How the delay is kept depends on the transport
   * (RabbitMQ: the delivery is held unacknowledged, then requeued; see docs/inbox.md).
   * Default 1000.
   */
  backoffBaseMs?: number;
  /** Longest delay between two attempts of one message, in ms. Default 60000. */
  backoffMaxMs?: number;
}

/** The inbox options with every default applied. */
export type ResolvedInboxOptions = Required<InboxOptions>;

/** The inbox defaults. @internal */
export const INBOX_DEFAULTS: ResolvedInboxOptions = {
  acknowledge: 'auto',
  maxAttempts: 5,
  onMaxAttempts: 'ack',
  strayWrites: defaultStrayWrites(),
  backoffBaseMs: 1000,
  backoffMaxMs: 60_000,
};

/** Inbox defaults; `strayWrites` follows the module's unless set. @internal */
export function resolveInboxOptions(
  raw: InboxOptions = {},
  strayWrites: StrayWritesPolicy,
): ResolvedInboxOptions {
  return { ...INBOX_DEFAULTS, strayWrites, ...stripUndefined(raw) };
}

/** Checks of the inbox options. @internal */
export function validateInboxOptions(o: ResolvedInboxOptions, fail: (msg: string) => void): void {
  if (!isStrayWritesPolicy(o.strayWrites)) {
    fail(`inbox.strayWrites must be 'error', 'warn' or 'ignore', got ${String(o.strayWrites)}`);
  }
  if (!['auto', true, false].includes(o.acknowledge)) {
    fail(`inbox.acknowledge must be 'auto', true or false, got ${String(o.acknowledge)}`);
  }
  const backoff = inboxBackoffProblem(o);
  if (backoff) fail(backoff);
}
