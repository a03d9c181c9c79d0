import type { IdempotencyEvent } from '../gate/gate.options';

/**
 * The library's events, one union discriminated by `type` (`<family>.<kind>`): the gate's
 * answers, the outbox relay's outcomes and the inbox's. The same objects reach the module's
 * `onEvent` hook, `ExactlyOnceEvents.events$` and the diagnostics channel of their family
 * (`EVENT_CHANNELS`). `kind` repeats the part after the dot (the gate's events had it first).
 */
export type ExactlyOnceEvent<TRequest = any> = GateEvent<TRequest> | RelayEvent | InboxEvent;

/** The gate's answer to a guarded request: `gate.created`, `gate.replayed`, `gate.conflict`, `gate.mismatch`. */
export type GateEvent<TRequest = any> = IdempotencyEvent<TRequest>;

/** An outbox message the relay published: confirmed by the broker and marked sent. */
export interface RelayPublishedEvent {
  type: 'relay.published';
  kind: 'published';
  /** The message's id (`OutboxMessage.id`). */
  messageId: string;
  /** The event type given to `OutboxService.add()`. */
  eventType: string;
  /** Publish attempts, this one included. */
  attempts: number;
}

/** A publish attempt failed; the message is published again after `retryInMs`. */
export interface RelayRetryEvent {
  type: 'relay.retry';
  kind: 'retry';
  messageId: string;
  eventType: string;
  /** Failed attempts so far. */
  attempts: number;
  /** Backoff before the next attempt, in ms. */
  retryInMs: number;
  /** The publisher's error text. */
  error: string;
}

/** A message failed `outbox.maxAttempts` times: it is dead (kept, not published again). */
export interface RelayDeadEvent {
  type: 'relay.dead';
  kind: 'dead';
  messageId: string;
  eventType: string;
  attempts: number;
  error: string;
}

/**
 * The relay published a batch after its lease lapsed and another relay took some rows over:
 * those are published again by the other relay (at-least-once; the inbox de-duplicates).
 */
export interface RelayLeaseLostEvent {
  type: 'relay.lease-lost';
  kind: 'lease-lost';
  /** The batch owner (`<relayId>#<batch>`). */
  owner: string;
  /** Messages the broker confirmed. */
  published: number;
  /** Of those, the ones still ours to mark sent. */
  marked: number;
}

/** The outbox relay's events. */
export type RelayEvent =
  RelayPublishedEvent | RelayRetryEvent | RelayDeadEvent | RelayLeaseLostEvent;

/** A message the inbox handled: processed now, a duplicate skipped, or recorded failed. */
export interface InboxEvent {
  /**
   * `inbox.processed`: the handler ran and its transaction committed; `inbox.duplicate`: the
   * message was settled before (processed, or failed), the handler did not run;
   * `inbox.failed`: the message failed `maxAttempts` times and is recorded failed.
   */
  type: 'inbox.processed' | 'inbox.duplicate' | 'inbox.failed';
  kind: 'processed' | 'duplicate' | 'failed';
  /** The consumer's name. */
  consumer: string;
  messageId: string;
  /** Attempts recorded for the message. */
  attempts: number;
  /** `inbox.failed`: the last error's text. */
  error?: string;
}

/** The families of the union: the part of `type` before the dot. */
export type ExactlyOnceEventFamily = ExactlyOnceEvent['type'] extends `${infer F}.${string}`
  ? F
  : never;
