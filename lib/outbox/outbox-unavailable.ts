import type { OutboxPublisher } from './outbox-publisher.interface';
import { PublisherUnavailableError } from './outbox.errors';

/**
 * Telling "the broker could not be reached" from "the broker refused this message". The first is
 * no attempt of the message: the relay gives it back unpublished and backs off as a whole (see
 * docs/outbox.md, "What counts as an attempt"); the second counts towards `outbox.maxAttempts`.
 * A publisher says which is which with `PublisherUnavailableError` or its `isUnavailable()`.
 */

/** Node socket and DNS error codes: the peer could not be reached or the connection ended. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ERR_SOCKET_CLOSED',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Error names and codes of broker clients whose connection is down:
 * - nats.js: `NatsError` codes of a closed, draining, refused or lost connection;
 * - kafkajs: the connection errors and a broker that cannot be found (no leader reachable);
 * - @azure/service-bus: `ServiceBusError` codes of a service that is busy, timing out, cannot
 *   be talked to, or whose entity is full or disabled (every message alike).
 */
const TRANSPORT_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DRAINING',
  'CONNECTION_REFUSED',
  'CONNECTION_TIMEOUT',
  'DISCONNECT',
  'ServiceBusy',
  'ServiceTimeout',
  'ServiceCommunicationProblem',
  'QuotaExceeded',
  'MessagingEntityDisabled',
]);
const TRANSPORT_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSBrokerNotFound',
  'KafkaJSRequestTimeoutError',
]);

/**
 * Texts of a lost connection where the client gives no code: Nest's ClientRMQ rejects with the
 * string "Error: Connection lost. Trying to reconnect..."; amqplib's "Connection closed",
 * "Channel ended, no reply will be forthcoming" and a bare "Channel closed" (a channel closed by
 * the server for a message, "Channel closed by server: 406 (PRECONDITION-FAILED) …", is the
 * message's fault and is not matched), "Socket closed abruptly during opening handshake" and
 * "Unexpected close"; Node's "socket hang up".
 */
const LOST_CONNECTION_TEXT =
  /Connection lost\. Trying to reconnect|^(?:Error: )?Connection closed|Channel ended, no reply will be forthcoming|^(?:Error: )?Channel closed$|Socket closed abruptly|^(?:Error: )?Unexpected close$|socket hang up/i;

/**
 * Every error in `error`'s chain (`cause`, `originalError`, an AggregateError's `errors`,
 * amqp-connection-manager's `{ err, url }`), each once.
 */
function* chain(error: unknown): Generator<unknown> {
  const seen = new Set<unknown>();
  const stack = [error];
  while (stack.length) {
    const e = stack.pop();
    if (e === undefined || e === null || seen.has(e)) continue;
    seen.add(e);
    yield e;
    if (typeof e !== 'object') continue;
    const x = e as { cause?: unknown; errors?: unknown; originalError?: unknown; err?: unknown };
    stack.push(x.cause, x.originalError, x.err);
    if (Array.isArray(x.errors)) stack.push(...x.errors);
  }
}

/**
 * Whether `error` (or an error it wraps) says the connection to a server could not be made or
 * was lost: Node socket codes, the broker clients' connection errors (nats.js, kafkajs, Azure
 * Service Bus, amqplib, Nest's ClientRMQ). The default classification of a publisher that has no
 * `isUnavailable()` of its own.
 */
export function isConnectionError(error: unknown): boolean {
  for (const e of chain(error)) {
    if (typeof e === 'string') {
      if (LOST_CONNECTION_TEXT.test(e)) return true;
      continue;
    }
    if (typeof e !== 'object') continue;
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown };
    if (typeof code === 'string' && (SOCKET_CODES.has(code) || TRANSPORT_CODES.has(code))) {
      return true;
    }
    if (typeof name === 'string' && TRANSPORT_NAMES.has(name)) return true;
    if (typeof message === 'string' && LOST_CONNECTION_TEXT.test(message)) return true;
  }
  return false;
}

/**
 * Whether a failed publish was the broker being unreachable (no attempt of the message) rather
 * than the message being refused: a `PublisherUnavailableError` anywhere in the chain; else the
 * publisher's own `isUnavailable(error)` when it has one; else {@link isConnectionError}.
 * A classifier that throws counts the failure as an attempt (the safe side: a message cannot
 * stall the relay for ever).
 * @internal
 */
export function isPublisherUnavailable(publisher: OutboxPublisher, error: Error): boolean {
  for (const e of chain(error)) if (e instanceof PublisherUnavailableError) return true;
  try {
    return publisher.isUnavailable ? !!publisher.isUnavailable(error) : isConnectionError(error);
  } catch {
    return false;
  }
}
