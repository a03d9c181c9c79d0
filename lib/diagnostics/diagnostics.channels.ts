import { channel, type Channel } from 'node:diagnostics_channel';

/**
 * The library's `node:diagnostics_channel` channels: moments of a request or of a relay batch
 * that tracing, debugging and crash tests can hook into (`diagnostics_channel.subscribe(name,
 * fn)`). A channel nobody subscribes to costs nothing: `hasSubscribers` is checked first and no
 * message is built. Subscribers run synchronously, at that exact moment.
 */
export const DIAGNOSTICS_CHANNELS = {
  /** Leased mode: the reservation has committed, the handler has not run. Message `{ keyHash }` (the key's short hash, as in logs). */
  gateAfterReservationCommit: 'nestjs-exactly-once:gate.after-reservation-commit',
  /** The transaction with the business writes and the response snapshot has committed; no byte of the answer has been sent. Message `{ keyHash }` (the key's short hash, as in logs). */
  gateAfterCommit: 'nestjs-exactly-once:gate.after-commit',
  /**
   * While this channel has subscribers, a captured answer is sent in two writes and the message
   * is published between them, once the head and the first half of the body have been handed to
   * the socket. Message `{ status, sentBytes, totalBytes }`.
   */
  gateMidResponse: 'nestjs-exactly-once:gate.mid-response',
  /** The relay has published a batch and not yet marked it sent. Message `{ owner, published, failed }`. */
  outboxAfterPublish: 'nestjs-exactly-once:outbox.after-publish',
} as const;

/** @internal */
export const gateAfterReservationCommit = channel(DIAGNOSTICS_CHANNELS.gateAfterReservationCommit);
/** @internal */
export const gateAfterCommit = channel(DIAGNOSTICS_CHANNELS.gateAfterCommit);
/** @internal */
export const gateMidResponse = channel(DIAGNOSTICS_CHANNELS.gateMidResponse);
/** @internal */
export const outboxAfterPublish = channel(DIAGNOSTICS_CHANNELS.outboxAfterPublish);

/** @internal Publishes a gate moment of the request `info` (no message is built when nobody listens). */
export function publishGate(ch: Channel, info: { keyHash: string }): void {
  if (ch.hasSubscribers) ch.publish({ keyHash: info.keyHash });
}
