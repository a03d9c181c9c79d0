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
    await consumer.subscribe({ ...this.options.subscribe, topics: [this.topic] });
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
}
