import { ServerKafka, type KafkaOptions } from '@nestjs/microservices';
import type { Consumer } from '@nestjs/microservices/external/kafka.interface';
import { OUTBOX_HEADERS } from '../../lib';

/** A Kafka record as Nest's ServerKafka hands it to its deserializer (headers decoded). */
interface ParsedRecord {
  value?: unknown;
  headers?: Record<string, unknown>;
}

/**
 * Nest's `ServerKafka` with every event type on one topic: it subscribes to the topic
 * BROKER_QUEUE (Nest's own subscribes to one topic per `@EventPattern`) and routes each record
 * by its `message-type` header (which `KafkaPublisher` sets), so `@EventPattern('payment.captured')`
 * works as on RabbitMQ and NATS. One topic keeps a payment's events in one partition, in order.
 *
 * Offsets: kafkajs commits an offset once `eachMessage` resolved, which is after the
 * `@IdempotentConsumer()` handler's transaction committed (or after it was recorded failed); a
 * handler that throws is redelivered from the last committed offset, and the inbox skips what
 * was applied. A new consumer group starts at the beginning of the topic (nothing published
 * before the first consumer joined is skipped).
 */
export class KafkaTopicServer extends ServerKafka {
  constructor(
    private readonly topic: string,
    options: Required<KafkaOptions>['options'],
  ) {
    super({
      ...options,
      deserializer: {
        deserialize: (record: ParsedRecord, opts?: { channel?: string }) => {
          const type = record?.headers?.[OUTBOX_HEADERS.type];
          return {
            pattern: typeof type === 'string' && type ? type : opts?.channel,
            data: record?.value ?? record,
          };
        },
      },
    });
  }

  override async bindEvents(consumer: Consumer): Promise<void> {
    await this.ensureTopic();
    await this.subscribeOnceKnown(consumer);
    await consumer.run({ ...this.options.run, eachMessage: this.getMessageHandler() });
  }

  /**
   * Creates the topic when the cluster has not got it yet (a new cluster, a new BROKER_QUEUE), as
   * the RabbitMQ transport asserts its queue: subscribing to a missing topic fails the boot with
   * UNKNOWN_TOPIC_OR_PARTITION even where the brokers create topics on first use. The brokers'
   * defaults for partitions and replication apply; an existing topic is left as it is.
   */
  private async ensureTopic(): Promise<void> {
    const admin = this.client!.admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic: this.topic }], waitForLeaders: true });
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Subscribes to the topic, again while the broker asked does not know it yet (for up to 30 s):
   * a topic just created reaches every broker's metadata a moment later, and when the topic was
   * created by someone else in the meantime (`createTopics` then answers TOPIC_ALREADY_EXISTS at
   * once, without waiting for its leaders) the subscription can ask a broker that has not got it
   * (UNKNOWN_TOPIC_OR_PARTITION: seen once on a 3-node cluster, the boot then failed).
   */
  private async subscribeOnceKnown(consumer: Consumer): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (let pause = 100; ; pause = Math.min(pause * 2, 2_000)) {
      try {
        await consumer.subscribe({ ...this.options.subscribe, topics: [this.topic] });
        return;
      } catch (error) {
        const type = (error as { type?: unknown }).type;
        const unknownYet = type === 'UNKNOWN_TOPIC_OR_PARTITION' || type === 'LEADER_NOT_AVAILABLE';
        if (!unknownYet || Date.now() + pause > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }
}
