import { channel, type Channel } from 'node:diagnostics_channel';
import type { ExactlyOnceEventFamily } from './exactly-once-event';

/**
 * The `node:diagnostics_channel` channel of each event family: every `ExactlyOnceEvent` of the
 * family is published there, as the object itself (`diagnostics_channel.subscribe(
 * EVENT_CHANNELS.relay, (event) => …)`). Typed by the union: a family without a channel does
 * not compile.
 */
export const EVENT_CHANNELS: Record<ExactlyOnceEventFamily, string> = {
  /** `gate.created`, `gate.replayed`, `gate.conflict`, `gate.mismatch`. */
  gate: 'nestjs-exactly-once:events.gate',
  /** `relay.published`, `relay.retry`, `relay.dead`, `relay.lease-lost`. */
  relay: 'nestjs-exactly-once:events.relay',
  /** `inbox.processed`, `inbox.duplicate`, `inbox.failed`. */
  inbox: 'nestjs-exactly-once:events.inbox',
};

/** @internal The channels themselves, by family. */
export const eventChannels = Object.fromEntries(
  Object.entries(EVENT_CHANNELS).map(([family, name]) => [family, channel(name)]),
) as Record<ExactlyOnceEventFamily, Channel>;
