import { Logger } from '@nestjs/common';
import type { ClientProxy } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import {
  listenToChannelErrors,
  listenToEveryChannel,
  RMQ_CLOSE_TIMED_OUT,
  watchRmqClient,
} from '../../internal/rmq-connection-loss';
import { RMQ_CLIENT_CHANNEL_ERROR } from '../outbox.messages';
import { requireOptionalPackage } from './optional-package';
import { publishAsBatch } from './publish-as-batch';
import { isConnectionError } from '../outbox-unavailable';
import type { OutboxMessage } from '../outbox-message.interface';
import type { OutboxPublisher } from '../outbox-publisher.interface';

const rmqLogger = new Logger('ClientProxyPublisher');

/**
 * Statuses of Nest's clients under which a publish can succeed: `connected` (every transport),
 * `unblocked` (RabbitMQ after a memory or disk alarm), `rebalancing` (Kafka consumer groups; the
 * producer still publishes). Any other (`disconnected`, `reconnecting`, `blocked`, `crashed`,
 * `stopped`) means the broker cannot take messages now.
 */
const CONNECTED_STATUSES = new Set(['connected', 'unblocked', 'rebalancing']);
const onRmqChannelError = (e: unknown) => rmqLogger.warn(RMQ_CLIENT_CHANNEL_ERROR(e));
const onRmqCloseTimedOut = (ms: number) => rmqLogger.warn(RMQ_CLOSE_TIMED_OUT('ClientRMQ', ms));

/** How the message id and headers are carried, per Nest transport. */
export type ClientProxyTransport = 'rmq' | 'nats' | 'kafka' | 'mqtt' | 'plain';

/** Options of `ClientProxyPublisher`: the pattern a message is emitted on, and the transport it is told by. */
export interface ClientProxyPublisherOptions {
  /** The event pattern (routing key, subject, topic) of a message. Default: its type. */
  pattern?: (message: OutboxMessage) => string;
  /** Default: told from the client's class (ClientRMQ, ClientNats, ClientKafka, ClientMqtt; anything else is `plain`). */
  transport?: ClientProxyTransport;
  /**
   * Send `{ id, type, partitionKey, headers, payload }` as the event data instead of the bare
   * payload. Default: true for `plain` transports (Redis, TCP, custom), which carry no headers,
   * so the message id still reaches the consumer; false otherwise.
   */
  envelope?: boolean;
  /**
   * RabbitMQ: a message the broker has not confirmed after this many ms is dropped from the
   * client's in-memory queue (amqp-connection-manager's per-message timeout), so an outage does
   * not deliver it late on reconnect in addition to the relay's retry. Keep it at or below
   * `outbox.publishTimeoutMs`. Default 10000.
   */
  confirmTimeoutMs?: number;
  /**
   * Classifies a failed publish: `true` when the broker could not be reached (no attempt is
   * counted, the relay backs off as a whole), `false` when the message itself was refused,
   * `undefined` to leave it to the default: unavailable when the client's `status` (Nest 11+)
   * last said it was not connected (disconnected, reconnecting, RabbitMQ `blocked`, Kafka
   * `crashed`/`stopped`), or when the error is a connection error (`isConnectionError()`).
   */
  isUnavailable?: (error: Error) => boolean | undefined;
}

/** The event data of the `envelope` format. */
export interface OutboxEnvelope<TPayload = unknown> {
  id: string;
  type: string;
  partitionKey: string | null;
  headers: Record<string, string>;
  payload: TPayload;
}

type Microservices = typeof import('@nestjs/microservices');
/** What the publisher uses of the `nats` package. */
type NatsHeaders = { headers(): { set(name: string, value: string): void } };

/** `messaging.system` values (OpenTelemetry semantic conventions) of the transports. */
const MESSAGING_SYSTEMS: Partial<Record<ClientProxyTransport, string>> = {
  rmq: 'rabbitmq',
  nats: 'nats',
  kafka: 'kafka',
  mqtt: 'mqtt',
};

/**
 * Publishes through a Nest microservices `ClientProxy` (`client.emit(type, data)`): one adapter
 * for RabbitMQ, NATS, Kafka, MQTT, Redis and TCP. The message id and headers travel with the
 * message so consumers can de-duplicate, in the transport's own way:
 * - RabbitMQ: AMQP `messageId` and `type` properties, the headers as AMQP headers, persistent.
 *   `ClientRMQ` publishes on a confirm channel: `emit()` completes once the broker has confirmed
 *   (publisher confirms).
 * - NATS: NATS headers (plus `Nats-Msg-Id`, which JetStream de-duplicates by); core NATS has no
 *   acknowledgement, so after publishing the publisher flushes the connection (a PING/PONG round
 *   trip): the server has received everything published before it.
 * - Kafka: the partition key is the record key (same partition, in order), headers as record
 *   headers; `emit()` completes when the producer's `send()` is acknowledged.
 * - MQTT: QoS 1 (PUBACK), headers as MQTT 5 user properties.
 * - plain (Redis, TCP, custom transports): the envelope `{ id, type, partitionKey, headers, payload }`.
 */
export class ClientProxyPublisher implements OutboxPublisher {
  private readonly ms: Microservices;
  private readonly transport: ClientProxyTransport;
  private readonly envelope: boolean;
  /** The client's last `status` (Nest 11+ ClientProxy), undefined before its first one. */
  private clientStatus: string | undefined;

  constructor(
    private readonly client: ClientProxy,
    private readonly options: ClientProxyPublisherOptions = {},
  ) {
    this.ms = requireOptionalPackage<Microservices>(
      '@nestjs/microservices',
      'ClientProxyPublisher',
    );
    this.transport = options.transport ?? this.detectTransport();
    this.envelope = options.envelope ?? this.transport === 'plain';
    if (this.transport === 'rmq') {
      // A ClientRMQ is watched from before it connects: every channel of every connection it
      // opens. Another client declared `rmq` is only listened to after each batch.
      if (client instanceof this.ms.ClientRMQ) {
        watchRmqClient(client, onRmqChannelError, onRmqCloseTimedOut);
      }
      this.listenToRmqChannelErrors();
    }
    this.watchStatus();
  }

  /**
   * Whether a failed publish was the broker being unreachable rather than the message being
   * refused (see {@link ClientProxyPublisherOptions.isUnavailable}). A publish that timed out
   * while the client said it was connected counts as an attempt.
   */
  isUnavailable(error: Error): boolean {
    const own = this.options.isUnavailable?.(error);
    if (own !== undefined) return own;
    if (this.clientStatus !== undefined && !CONNECTED_STATUSES.has(this.clientStatus)) return true;
    return isConnectionError(error);
  }

  /** OpenTelemetry's `messaging.system` of the transport (undefined for `plain` ones). */
  get messagingSystem(): string | undefined {
    return MESSAGING_SYSTEMS[this.transport];
  }

  publish(message: OutboxMessage): Promise<void> {
    return publishAsBatch(this, message);
  }

  /** Emits the whole batch at once (confirms arrive concurrently); on NATS, one flush for the batch. */
  async publishBatch(
    messages: readonly OutboxMessage[],
  ): Promise<ReadonlyArray<Error | undefined>> {
    const outcomes = await Promise.all(
      messages.map(async (m) => {
        try {
          const pattern = this.options.pattern ? this.options.pattern(m) : m.type;
          await lastValueFrom(this.client.emit(pattern, this.toRecord(m)), {
            defaultValue: undefined,
          });
          return undefined;
        } catch (e) {
          return asError(e);
        }
      }),
    );
    if (this.transport === 'rmq') this.listenToRmqChannelErrors();
    if (this.transport === 'nats' && outcomes.some((o) => !o)) {
      try {
        await this.flushNats();
      } catch (e) {
        const error = e instanceof Error ? e : new Error(String(e));
        return outcomes.map((o) => o ?? error);
      }
    }
    return outcomes;
  }

  /** The data passed to `client.emit()` (override to change the mapping). */
  protected toRecord(m: OutboxMessage): unknown {
    const data: unknown = this.envelope
      ? ({
          id: m.id,
          type: m.type,
          partitionKey: m.partitionKey,
          headers: { ...m.headers },
          payload: m.payload,
        } satisfies OutboxEnvelope)
      : m.payload;
    switch (this.transport) {
      case 'rmq':
        return new this.ms.RmqRecord(data, {
          messageId: m.id,
          type: m.type,
          headers: { ...m.headers },
          persistent: true,
          contentType: 'application/json',
          timestamp: Math.floor(m.createdAt.getTime() / 1000),
          // Read by amqp-connection-manager's ChannelWrapper: drop the message if unconfirmed by then.
          timeout: this.options.confirmTimeoutMs ?? 10_000,
        } as ConstructorParameters<Microservices['RmqRecord']>[1]);
      case 'nats': {
        const nats = requireOptionalPackage<NatsHeaders>('nats', 'ClientProxyPublisher on NATS');
        const headers = nats.headers();
        for (const [name, value] of Object.entries(m.headers)) headers.set(name, value);
        headers.set('Nats-Msg-Id', m.id);
        return new this.ms.NatsRecord(data, headers);
      }
      case 'kafka':
        return { key: m.partitionKey, value: data, headers: { ...m.headers } };
      case 'mqtt':
        return new this.ms.MqttRecord(data, {
          qos: 1,
          properties: { userProperties: { ...m.headers }, contentType: 'application/json' },
        });
      default:
        return data;
    }
  }

  private detectTransport(): ClientProxyTransport {
    const c = this.client as unknown;
    if (c instanceof this.ms.ClientRMQ) return 'rmq';
    if (c instanceof this.ms.ClientNats) return 'nats';
    if (c instanceof this.ms.ClientKafka) return 'kafka';
    if (c instanceof this.ms.ClientMqtt) return 'mqtt';
    return 'plain';
  }

  /**
   * RabbitMQ: Nest's ClientRMQ creates its amqp-connection-manager channels with no `error`
   * listener, and a channel whose setup fails (its connection drops while the channel opens or
   * the queue is declared) emits `error`, which would end the process (see
   * internal/rmq-connection-loss.ts). The publisher listens, once per channel: the failure is
   * logged, the channel sets itself up again on the next connect, and the relay retries what was
   * not confirmed. After each batch, for a client that is not a ClientRMQ.
   */
  private listenToRmqChannelErrors(): void {
    const client = this.client as unknown as { client?: unknown; channel?: unknown };
    listenToEveryChannel(client.client, onRmqChannelError);
    listenToChannelErrors(client.channel, onRmqChannelError);
  }

  /**
   * Follows the client's `status` stream (ClientProxy of Nest 11+; absent on older or custom
   * clients, which then rely on the error alone). A ReplaySubject: no timer, nothing kept alive.
   */
  private watchStatus(): void {
    const status = (this.client as unknown as { status?: unknown }).status as
      { subscribe?: (next: (s: unknown) => void) => unknown } | undefined;
    if (typeof status?.subscribe !== 'function') return;
    try {
      status.subscribe((s) => (this.clientStatus = typeof s === 'string' ? s : undefined));
    } catch {
      // a client without a usable status stream: errors alone classify
    }
  }

  /** NATS: resolves once the server has processed everything published so far. */
  private async flushNats(): Promise<void> {
    const connection = (
      this.client as unknown as { unwrap?: () => { flush?: () => Promise<void> } }
    ).unwrap?.();
    await connection?.flush?.();
  }
}

/**
 * A client's rejection as an Error. Nest's ClientRMQ rejects with a string while it reconnects
 * ("Error: Connection lost. Trying to reconnect...") and with amqp-connection-manager's
 * `{ err, url }` event when it cannot connect at all: the Error inside is kept (as the cause).
 */
function asError(e: unknown): Error {
  if (e instanceof Error) return e;
  const inner = (e as { err?: unknown } | null)?.err;
  // Duck-typed: an error made in another realm (a test sandbox) is no `instanceof Error` here.
  if (inner && typeof (inner as Error).message === 'string') {
    const url = (e as { url?: unknown }).url;
    const where = typeof url === 'string' ? ` (${url.replace(/\/\/([^@/]*)@/, '//***@')})` : '';
    return new Error(`${(inner as Error).message}${where}`, { cause: inner });
  }
  return new Error(String(e));
}
