import type { OnApplicationShutdown } from '@nestjs/common';
import { ExactlyOnceError } from '../../errors/exactly-once.error';
import type { OutboxMessage } from '../outbox-message.interface';
import type { OutboxPublisher } from '../outbox-publisher.interface';
import { OutboxPublishTimeoutError } from '../outbox.errors';
import {
  KAFKA_BATCH_IN_FLIGHT,
  KAFKA_OPTIONS_INVALID,
  KAFKA_PARTITIONS_UNACKNOWLEDGED,
} from '../outbox.messages';
import { requireOptionalPackage } from './optional-package';
import { publishAsBatch } from './publish-as-batch';

/** The part of a kafkajs `Producer` this publisher uses. */
export interface KafkaProducerLike {
  /** Connects to the cluster. */
  connect(): Promise<void>;
  /** Disconnects from the cluster. */
  disconnect(): Promise<void>;
  /** Sends messages to several topics in one call; resolves with the brokers' acknowledgement. */
  sendBatch(batch: {
    topicMessages: Array<{
      topic: string;
      messages: Array<{
        key: string | null;
        value: string;
        headers: Record<string, string>;
        timestamp: string;
      }>;
    }>;
    acks: number;
    timeout?: number;
  }): Promise<unknown>;
}

/** The part of a kafkajs `Kafka` client this publisher uses. */
export interface KafkaClientLike {
  /** A new producer with this configuration. */
  producer(config: Record<string, unknown>): KafkaProducerLike;
}

/** Options of `KafkaPublisher`: the cluster (brokers, or a kafkajs client), a message's topic, the producer's settings and the acknowledgement time-out. */
export interface KafkaPublisherOptions {
  /** Bootstrap brokers (`host:port`), when the publisher creates its own kafkajs client. */
  brokers?: string[];
  /** The kafkajs client id of that client. Default `outbox-relay`. */
  clientId?: string;
  /** Other kafkajs client settings (ssl, sasl, connectionTimeout, …) of that client. */
  client?: Record<string, unknown>;
  /**
   * A kafkajs `Kafka` client of the app (instead of `brokers`): the publisher creates its
   * producer on it, with the settings below.
   */
  kafka?: KafkaClientLike;
  /**
   * The topic of a message: a name, or a function of the message. Default: the message type,
   * which is the topic Nest's `ServerKafka` subscribes `@EventPattern(type)` handlers to. One
   * topic for all types of an aggregate keeps the order of its key across types (a key's
   * order holds within one partition of one topic).
   */
  topic?: string | ((message: OutboxMessage) => string);
  /**
   * Other kafkajs producer settings. `idempotent` (true), `maxInFlightRequests` (1) and the
   * acks (-1, all in-sync replicas) are the publisher's and cannot be changed here.
   */
  producer?: Record<string, unknown>;
  /** How long a broker waits for the in-sync replicas' acks, in ms (kafkajs `timeout`). Default 30000. */
  ackTimeoutMs?: number;
}

type KafkaJs = {
  Kafka: new (config: Record<string, unknown>) => KafkaClientLike;
  Partitioners: { DefaultPartitioner: unknown };
  logLevel: { WARN: number };
};

/**
 * A batch the publisher did not send because the previous one is still waiting for Kafka's
 * acknowledgement (the relay gave up waiting for it: the cluster is slow or unreachable).
 */
export class KafkaBatchInFlightError extends ExactlyOnceError {
  readonly code = 'KAFKA_BATCH_IN_FLIGHT';

  constructor() {
    super(KAFKA_BATCH_IN_FLIGHT);
  }
}

/**
 * kafkajs resolved a `sendBatch` without an acknowledgement for some partitions the batch wrote
 * to. kafkajs 2.2 retries a produce only to the brokers that have not answered yet: when a
 * partition's leader dies mid-send and the partition moves to a broker that had already
 * acknowledged its own partitions of the batch, the moved partition's records are never sent
 * again, and `sendBatch` resolves all the same (seen on the 3-node cluster: acknowledged records
 * missing from the log after a leader SIGKILL). The publisher compares the partitions its
 * partitioner chose with those acknowledged and fails the batch; the relay retries it whole.
 */
export class KafkaPartitionsUnacknowledgedError extends ExactlyOnceError {
  readonly code = 'KAFKA_PARTITIONS_UNACKNOWLEDGED';

  constructor(readonly partitions: string[]) {
    super(KAFKA_PARTITIONS_UNACKNOWLEDGED(partitions));
  }
}

/** Errors (by class name) that say a broker or the cluster could not be reached. */
const UNAVAILABLE_ERRORS = new Set([
  'KafkaBatchInFlightError',
  'KafkaPartitionsUnacknowledgedError',
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSNoBrokerAvailableError',
  'KafkaJSBrokerNotFound',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSTopicMetadataNotLoaded',
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSLockTimeout',
  'KafkaJSTimeout',
  'KafkaJSStaleTopicMetadataAssignment',
]);

/**
 * Kafka protocol error types (kafkajs' `KafkaJSProtocolError.type`, and the Java client's names
 * of the same codes) that mean a leader or enough replicas are not there (yet), a broker timed
 * out, or the producer's session with the partition leader was lost in a failover (the next batch
 * gets a new producer id): nothing the message did. A refusal of the message itself
 * (`MESSAGE_TOO_LARGE`, `RECORD_LIST_TOO_LARGE`, `INVALID_TOPIC_EXCEPTION`, `INVALID_RECORD`,
 * `CORRUPT_MESSAGE`, `TOPIC_AUTHORIZATION_FAILED`, `UNKNOWN_TOPIC_OR_PARTITION`, …) is not here:
 * it counts as an attempt.
 */
const UNAVAILABLE_PROTOCOL_TYPES = new Set([
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'NOT_LEADER_OR_FOLLOWER',
  'PREFERRED_LEADER_NOT_AVAILABLE',
  'ELIGIBLE_LEADERS_NOT_AVAILABLE',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'BROKER_NOT_AVAILABLE',
  'REPLICA_NOT_AVAILABLE',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'REQUEST_TIMED_OUT',
  'NETWORK_EXCEPTION',
  'NOT_CONTROLLER',
  'COORDINATOR_NOT_AVAILABLE',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR',
  'NOT_COORDINATOR_FOR_GROUP',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'GROUP_LOAD_IN_PROGRESS',
  'KAFKA_STORAGE_ERROR',
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
]);

/**
 * Whether an error of `KafkaPublisher` (kafkajs) says the cluster was unreachable or without a
 * leader / enough in-sync replicas (a transport outage, not a fault of the message): connection
 * errors, request timeouts, no broker or coordinator, a leader election or too few in-sync
 * replicas, and `KafkaJSNumberOfRetriesExceeded` / `KafkaJSNonRetriableError` whose cause is one of
 * these. Follows `cause` / `originalError` and the `errors` of a `KafkaJSAggregateError` (one per
 * leader broker of a batch): one outage among them makes the whole an outage.
 */
export function isKafkaUnavailableError(error: unknown): boolean {
  const seen = new Set<unknown>();
  const stack: unknown[] = [error];
  while (stack.length) {
    const e = stack.pop() as
      | {
          name?: unknown;
          type?: unknown;
          cause?: unknown;
          originalError?: unknown;
          errors?: unknown;
        }
      | undefined;
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    if (typeof e.name === 'string' && UNAVAILABLE_ERRORS.has(e.name)) return true;
    if (typeof e.type === 'string' && UNAVAILABLE_PROTOCOL_TYPES.has(e.type)) return true;
    stack.push(e.cause, e.originalError);
    if (Array.isArray(e.errors)) stack.push(...e.errors);
  }
  return false;
}

/**
 * Publishes to Apache Kafka with kafkajs (an optional peer: `npm install kafkajs`), directly
 * rather than through Nest's `ClientKafka`: `ClientKafka.emit()` sends one record per call
 * with the producer settings of the app's client, while the relay needs the idempotent producer
 * with acks from all in-sync replicas, a whole batch in one produce round trip and the
 * broker's acknowledgement as the outcome.
 *
 * - The producer is idempotent (`idempotent: true`, one request in flight per broker): a
 *   produce request kafkajs retries is written once, in order.
 * - `acks: -1`: a batch is confirmed once every in-sync replica has it (at least
 *   `min.insync.replicas`); only then does the relay mark the messages published.
 * - The record key is the partition key (the same partition for a key, in order), the value the
 *   payload as JSON, the record headers the message's headers: `message-id`, `message-type`,
 *   `partition-key`, the trace context (`traceparent`, `tracestate`) and the event's own.
 * - A relay batch is one `sendBatch`: kafkajs groups it per partition, one produce request per
 *   leader broker. Its outcome is the batch's: when one partition's write fails, the relay
 *   retries the whole batch (messages already written arrive twice; the inbox skips them).
 *
 * A producer whose send or connect failed is dropped and the next batch gets a new one (a new
 * producer id): kafkajs would otherwise number the next batch as if the failed one had not been
 * written, and the broker could drop it as a duplicate of a batch it did write.
 *
 * One `sendBatch` at a time: while one waits for its acknowledgement (the relay's
 * `publishTimeoutMs` may have given up on it during an outage), a new batch is refused at once
 * with `KafkaBatchInFlightError` instead of queueing behind it, so an outage piles up no stale
 * batches to send when the cluster is back; the relay retries it after its backoff.
 *
 * Connects on the first publish (and again after a failed connect); closes on application
 * shutdown, after the relay stopped. {@link isKafkaUnavailableError} tells its outage errors.
 */
export class KafkaPublisher implements OutboxPublisher, OnApplicationShutdown {
  /** OpenTelemetry's `messaging.system` of the relay's spans. */
  readonly messagingSystem = 'kafka';
  private readonly createProducer: () => KafkaProducerLike;
  private producer?: KafkaProducerLike;
  private connecting?: Promise<void>;
  private inFlight = false;
  private closed = false;
  /** `topic:partition` of the records of the batch being sent (filled by the partitioner). */
  private partitioned = new Set<string>();

  constructor(private readonly options: KafkaPublisherOptions) {
    if (!options || (!options.kafka && !options.brokers?.length)) {
      throw new TypeError(KAFKA_OPTIONS_INVALID('brokers (or kafka) is required'));
    }
    if (options.topic !== undefined && typeof options.topic !== 'function' && !options.topic) {
      throw new TypeError(KAFKA_OPTIONS_INVALID('topic must be a non-empty string or a function'));
    }
    const kafkajs = requireOptionalPackage<KafkaJs>('kafkajs', 'KafkaPublisher');
    const kafka =
      options.kafka ??
      new kafkajs.Kafka({
        logLevel: kafkajs.logLevel.WARN,
        ...options.client,
        clientId: options.clientId ?? 'outbox-relay',
        brokers: options.brokers,
      });
    // The Java client's murmur2 partitioner by default (a key lands where Java producers put
    // it), or the app's; wrapped to note the partitions of the batch being sent.
    const createPartitioner = (options.producer?.createPartitioner ??
      kafkajs.Partitioners.DefaultPartitioner) as () => (args: { topic: string }) => number;
    this.createProducer = () =>
      kafka.producer({
        ...options.producer,
        createPartitioner: () => {
          const partitioner = createPartitioner();
          return (args: { topic: string }) => {
            const partition = partitioner(args);
            this.partitioned.add(`${args.topic}:${partition}`);
            return partition;
          };
        },
        idempotent: true,
        maxInFlightRequests: 1,
      });
  }

  publish(message: OutboxMessage): Promise<void> {
    return publishAsBatch(this, message);
  }

  async publishBatch(
    messages: readonly OutboxMessage[],
  ): Promise<ReadonlyArray<Error | undefined>> {
    const outcomes: Array<Error | undefined> = new Array(messages.length).fill(undefined);
    const topics = new Map<string, KafkaRecord[]>();
    messages.forEach((m, index) => {
      try {
        const topic = this.topicOf(m);
        if (!topics.has(topic)) topics.set(topic, []);
        topics.get(topic)!.push(this.toRecord(m));
      } catch (e) {
        outcomes[index] = e instanceof Error ? e : new Error(String(e));
      }
    });
    if (topics.size === 0) return outcomes;
    if (this.inFlight) {
      const busy = new KafkaBatchInFlightError();
      return outcomes.map((o) => o ?? busy);
    }
    this.inFlight = true;
    this.partitioned = new Set();
    let producer: KafkaProducerLike | undefined;
    try {
      producer = await this.connect();
      const acknowledged = await producer.sendBatch({
        topicMessages: [...topics].map(([topic, records]) => ({ topic, messages: records })),
        acks: -1,
        timeout: this.options.ackTimeoutMs ?? 30_000,
      });
      const missing = this.unacknowledged(acknowledged);
      if (missing.length) throw new KafkaPartitionsUnacknowledgedError(missing);
    } catch (e) {
      this.retire(producer);
      const error = e instanceof Error ? e : new Error(String(e));
      return outcomes.map((o) => o ?? error);
    } finally {
      this.inFlight = false;
    }
    return outcomes;
  }

  /**
   * The cluster out of reach (connection lost, no leader or coordinator, too few in-sync
   * replicas, a request time-out, the previous batch still unacknowledged): the relay counts no
   * attempt and backs off as a whole (see {@link isKafkaUnavailableError}). So is the relay's
   * own `OutboxPublishTimeoutError` while this publisher's batch is still waiting for Kafka
   * (connecting, or its produce request not answered): kafkajs retries a leader election, a
   * broker coming back or too few in-sync replicas inside `sendBatch`, on open connections, and
   * the relay's `publishTimeoutMs` can run out first; a cluster restarting is no fault of the
   * batch. What Kafka refuses for the message answers quickly with its own error, which counts.
   * (A topic that does not exist, with auto-creation off, fails after kafkajs' retries, about
   * 10 s by default: keep `publishTimeoutMs` above that for it to count.)
   */
  isUnavailable(error: Error): boolean {
    if (isKafkaUnavailableError(error)) return true;
    return (
      this.inFlight &&
      (error instanceof OutboxPublishTimeoutError || error?.name === 'OutboxPublishTimeoutError')
    );
  }

  /** Nest lifecycle hook: disconnects the producer (`close()`), after the relay has stopped. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /** Disconnects the producer (waits for a connect under way). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const connecting = this.connecting;
    const producer = this.producer;
    this.connecting = undefined;
    this.producer = undefined;
    if (!connecting || !producer) return;
    await connecting.catch(() => undefined);
    await producer.disconnect();
  }

  /** The topic of a message (see `topic`). */
  protected topicOf(m: OutboxMessage): string {
    const t = this.options.topic;
    const topic = typeof t === 'function' ? t(m) : (t ?? m.type);
    if (typeof topic !== 'string' || !topic) {
      throw new Error(KAFKA_OPTIONS_INVALID(`no topic for message ${m.id}`));
    }
    return topic;
  }

  /** The Kafka record of an outbox message (override to change the mapping). */
  protected toRecord(m: OutboxMessage): KafkaRecord {
    return {
      key: m.partitionKey,
      value: JSON.stringify(m.payload === undefined ? null : m.payload),
      headers: { ...m.headers },
      timestamp: String(m.createdAt.getTime()),
    };
  }

  /**
   * Partitions the partitioner chose for the batch that kafkajs' result does not acknowledge
   * (see {@link KafkaPartitionsUnacknowledgedError}).
   */
  private unacknowledged(result: unknown): string[] {
    if (!this.partitioned.size) return [];
    const acked = new Set(
      (Array.isArray(result) ? result : []).map(
        (r: { topicName?: string; partition?: number }) => `${r?.topicName}:${r?.partition}`,
      ),
    );
    return [...this.partitioned].filter((p) => !acked.has(p)).sort();
  }

  /** The connected producer (a new one after a failure). */
  private async connect(): Promise<KafkaProducerLike> {
    if (this.closed) throw new Error('KafkaPublisher is closed');
    if (!this.producer || !this.connecting) {
      this.producer = this.createProducer();
      this.connecting = this.producer.connect();
    }
    const producer = this.producer;
    try {
      await this.connecting;
    } catch (e) {
      this.retire(producer);
      throw e;
    }
    return producer;
  }

  /**
   * Drops a producer after a failed send or connect: the next batch gets a new producer id.
   * kafkajs advances an idempotent producer's sequence numbers only on success, so after a
   * batch the cluster wrote but did not acknowledge (a timeout, a lost connection, a leader
   * change), the next batch would reuse its sequence numbers and the broker would take it for a
   * retry of that one and drop it as a duplicate: seen on the 3-node cluster after a whole-
   * cluster restart (OUT_OF_ORDER_SEQUENCE_NUMBER, then acknowledged batches that were never
   * written).
   */
  private retire(producer: KafkaProducerLike | undefined): void {
    if (!producer || this.producer !== producer) return;
    this.producer = undefined;
    this.connecting = undefined;
    producer.disconnect().catch(() => undefined);
  }
}

/** One Kafka record as the publisher sends it. */
export interface KafkaRecord {
  key: string | null;
  value: string;
  headers: Record<string, string>;
  timestamp: string;
}
