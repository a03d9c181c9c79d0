import { Injectable } from '@nestjs/common';
import type { InboxAcknowledge } from '../idempotency.options';
import { RpcServerFollower } from './rpc-server.follower';
import { KAFKA_COMMIT_FAILED } from './inbox.messages';

/** The kafkajs consumer of a KafkaContext, as far as committing goes. */
interface KafkaConsumerLike {
  commitOffsets(
    offsets: Array<{ topic: string; partition: number; offset: string }>,
  ): Promise<void>;
}

/** A Kafka record's position, read from Nest's KafkaContext. */
export interface KafkaRecordPosition {
  consumer: KafkaConsumerLike;
  topic: string;
  partition: number;
  offset: string;
}

/** The record position of a KafkaContext, when the context is one (duck-typed). */
export function kafkaRecordPosition(context: unknown): KafkaRecordPosition | undefined {
  const ctx = context as any;
  if (
    !ctx ||
    typeof ctx.getPartition !== 'function' ||
    typeof ctx.getTopic !== 'function' ||
    typeof ctx.getConsumer !== 'function'
  ) {
    return undefined;
  }
  const consumer = ctx.getConsumer();
  const offset = ctx.getMessage?.()?.offset;
  if (!consumer || typeof consumer.commitOffsets !== 'function' || offset === undefined) {
    return undefined;
  }
  return { consumer, topic: ctx.getTopic(), partition: ctx.getPartition(), offset: String(offset) };
}

/** Nest's ServerKafka (11 and 12) as far as this file reads it. */
interface KafkaServerLike {
  transportId: unknown;
  consumer: unknown;
  options?: { run?: { autoCommit?: boolean } };
}

const isKafkaServer = (s: unknown): s is KafkaServerLike =>
  !!s &&
  typeof s === 'object' &&
  'consumer' in s &&
  typeof (s as any).getMessageHandler === 'function' &&
  typeof (s as any).bindEvents === 'function';

/**
 * Commits the offset of a Kafka record an `@IdempotentConsumer()` handler settled, when the
 * consuming server runs with `run: { autoCommit: false }`: after the inbox transaction
 * committed (processed, duplicate, recorded failed), the offset after the record. Under kafkajs'
 * `autoCommit` (Nest's default) kafkajs commits it itself, and only once the handler resolved,
 * which is after the inbox committed: nothing to do here. A handler that failed is never
 * committed: kafkajs fetches the record again (and, after its retries, restarts the consumer
 * from the last committed offset).
 * @internal
 */
@Injectable()
export class KafkaOffsetCommitter extends RpcServerFollower<KafkaServerLike> {
  protected isServer(target: unknown): target is KafkaServerLike {
    return isKafkaServer(target);
  }

  /** The record whose offset this consumer commits itself, or undefined. */
  manualRecord(
    context: unknown,
    acknowledge: InboxAcknowledge | undefined,
  ): KafkaRecordPosition | undefined {
    if ((acknowledge ?? this.options.inbox.acknowledge) === false) return undefined;
    const record = kafkaRecordPosition(context);
    if (!record) return undefined;
    const server = this.servers.find((s) => s.consumer === record.consumer);
    return server?.options?.run?.autoCommit === false ? record : undefined;
  }

  /** Commits the offset after the record (the next one to read). */
  async commit(record: KafkaRecordPosition, consumer: string): Promise<void> {
    try {
      await record.consumer.commitOffsets([
        {
          topic: record.topic,
          partition: record.partition,
          offset: (BigInt(record.offset) + 1n).toString(),
        },
      ]);
    } catch (e) {
      // A rebalance took the partition, or the cluster is away: the record comes again, and the
      // inbox skips it.
      this.logger.warn(KAFKA_COMMIT_FAILED(consumer, record.topic, record.partition, e));
    }
  }
}
