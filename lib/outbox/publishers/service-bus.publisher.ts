import { isConnectionError } from '../outbox-unavailable';
import type { OutboxMessage } from '../outbox-message.interface';
import type { OutboxPublisher } from '../outbox-publisher.interface';

/** The message fields of `@azure/service-bus`'s `ServiceBusMessage` this publisher sets. */
export interface ServiceBusMessageLike {
  body: unknown;
  messageId?: string;
  contentType?: string;
  subject?: string;
  sessionId?: string;
  partitionKey?: string;
  applicationProperties?: { [key: string]: number | boolean | string | Date | null };
}

/** The part of `@azure/service-bus`'s `ServiceBusMessageBatch` this publisher uses. */
export interface ServiceBusMessageBatchLike {
  readonly count: number;
  readonly sizeInBytes: number;
  readonly maxSizeInBytes: number;
  /** Adds a message if it fits in the batch; false when the batch is full. */
  tryAddMessage(message: ServiceBusMessageLike): boolean;
}

/**
 * The part of `@azure/service-bus`'s `ServiceBusSender` (from `client.createSender(queueOrTopic)`)
 * this publisher uses; a real sender fits it as is.
 */
export interface ServiceBusSenderLike {
  /** Sends one message, several, or a batch; resolves once Service Bus accepted them. */
  sendMessages(
    messages: ServiceBusMessageLike | ServiceBusMessageLike[] | ServiceBusMessageBatchLike,
  ): Promise<void>;
  /** A new empty batch. */
  createMessageBatch(): Promise<ServiceBusMessageBatchLike>;
}

/** Options of `ServiceBusPublisher`: sessions, a message's subject, and which errors mean Service Bus is unreachable. */
export interface ServiceBusPublisherOptions {
  /**
   * The entity is session-enabled: the partition key becomes the `sessionId`, so Service Bus
   * hands a key's messages to one receiver at a time, in order (use with `outbox.ordered`).
   * Default false: the partition key becomes `partitionKey` (same partition of a partitioned
   * entity; ignored by others).
   */
  sessions?: boolean;
  /** The `subject` (label) of a message. Default: its type. */
  subject?: (message: OutboxMessage) => string;
  /**
   * Classifies a failed send: `true` when Service Bus could not be reached (no attempt is
   * counted, the relay backs off as a whole), `false` when the message was refused, `undefined`
   * for the default `isConnectionError()`: `ServiceBusError` codes `ServiceBusy`,
   * `ServiceTimeout`, `ServiceCommunicationProblem`, `QuotaExceeded` (the entity is full) and
   * `MessagingEntityDisabled`, and socket errors; `MessageSizeExceeded`, `MessagingEntityNotFound`,
   * `UnauthorizedAccess` and the rest count as attempts.
   */
  isUnavailable?: (error: Error) => boolean | undefined;
}

/** Service Bus limit on messageId, sessionId and partitionKey. */
const MAX_ID_LENGTH = 128;

/**
 * Publishes to Azure Service Bus through a `ServiceBusSender` (`@azure/service-bus`, an optional
 * peer). `messageId` is the outbox message id, so the entity's duplicate detection drops a
 * message the relay publishes twice within the detection window; the body is the payload (JSON),
 * `subject` the type, the headers go to `applicationProperties`. `sendMessages` resolves once
 * Service Bus has accepted the message. Batches are sent with `createMessageBatch()`, one
 * `sendMessages` per group of messages with the same session / partition key (the SDK requires
 * it), so a batch fails or succeeds per group.
 */
export class ServiceBusPublisher implements OutboxPublisher {
  /** OpenTelemetry's `messaging.system` of the relay's spans. */
  readonly messagingSystem = 'servicebus';

  constructor(
    private readonly sender: ServiceBusSenderLike,
    private readonly options: ServiceBusPublisherOptions = {},
  ) {}

  async publish(message: OutboxMessage): Promise<void> {
    await this.sender.sendMessages(this.toServiceBusMessage(message));
  }

  /** Whether a failed send was Service Bus being unreachable (see {@link ServiceBusPublisherOptions.isUnavailable}). */
  isUnavailable(error: Error): boolean {
    return this.options.isUnavailable?.(error) ?? isConnectionError(error);
  }

  async publishBatch(
    messages: readonly OutboxMessage[],
  ): Promise<ReadonlyArray<Error | undefined>> {
    const outcomes: Array<Error | undefined> = new Array(messages.length).fill(undefined);
    const groups = new Map<string, Array<{ index: number; message: ServiceBusMessageLike }>>();
    messages.forEach((m, index) => {
      try {
        const message = this.toServiceBusMessage(m);
        const group = `${message.sessionId ?? ''}\u0000${message.partitionKey ?? ''}`;
        if (!groups.has(group)) groups.set(group, []);
        groups.get(group)!.push({ index, message });
      } catch (e) {
        outcomes[index] = e as Error;
      }
    });
    for (const items of groups.values()) {
      let pending: typeof items = [];
      let batch = await this.sender.createMessageBatch();
      const flush = async () => {
        if (!pending.length) return;
        try {
          await this.sender.sendMessages(batch);
        } catch (e) {
          for (const p of pending) outcomes[p.index] = e as Error;
        }
        pending = [];
        batch = await this.sender.createMessageBatch();
      };
      for (const item of items) {
        if (batch.tryAddMessage(item.message)) {
          pending.push(item);
          continue;
        }
        await flush();
        if (batch.tryAddMessage(item.message)) pending.push(item);
        else {
          outcomes[item.index] = new Error(
            `message ${item.message.messageId} is larger than a Service Bus batch`,
          );
        }
      }
      await flush();
    }
    return outcomes;
  }

  /** The Service Bus message for an outbox message (override to change the mapping). */
  protected toServiceBusMessage(m: OutboxMessage): ServiceBusMessageLike {
    if (m.id.length > MAX_ID_LENGTH) {
      throw new Error(`Service Bus messageId is limited to ${MAX_ID_LENGTH} characters: ${m.id}`);
    }
    const key = m.partitionKey ?? undefined;
    if (key !== undefined && key.length > MAX_ID_LENGTH) {
      throw new Error(
        `Service Bus ${this.options.sessions ? 'sessionId' : 'partitionKey'} is limited to ${MAX_ID_LENGTH} characters (partition key of ${m.id})`,
      );
    }
    const message: ServiceBusMessageLike = {
      body: m.payload,
      contentType: 'application/json',
      messageId: m.id,
      subject: this.options.subject ? this.options.subject(m) : m.type,
      applicationProperties: { ...m.headers },
    };
    if (key !== undefined) {
      if (this.options.sessions) message.sessionId = key;
      else message.partitionKey = key;
    }
    return message;
  }
}
