import {
  KafkaJSAggregateError,
  KafkaJSConnectionError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSRequestTimeoutError,
} from 'kafkajs';
import {
  isKafkaUnavailableError,
  KafkaBatchInFlightError,
  KafkaPartitionsUnacknowledgedError,
  KafkaPublisher,
} from '../../lib';
import { publishWithin } from '../../lib/outbox/outbox-publish';
import { isPublisherUnavailable } from '../../lib/outbox/outbox-unavailable';
import { OutboxPublishTimeoutError } from '../../lib/outbox/outbox.errors';
import type { KafkaClientLike, KafkaProducerLike, OutboxMessage } from '../../lib';

const retries = { retryCount: 5, retryTime: 1000 };
/** A Kafka protocol error as kafkajs builds it from an error code. */
const protocolError = (type: string, code: number) =>
  new KafkaJSProtocolError({ message: type, type, code, retriable: true } as never);

const message = (id: string, over: Partial<OutboxMessage> = {}): OutboxMessage => ({
  id,
  type: 'payment.captured',
  payload: { id, amount: 1 },
  headers: { 'message-id': id, 'message-type': 'payment.captured', traceparent: '00-abc-def-01' },
  partitionKey: `key-${id}`,
  seq: '1',
  attempts: 0,
  createdAt: new Date(1_700_000_000_000),
  ...over,
});

function fakeKafka(send: KafkaProducerLike['sendBatch'] = async () => []) {
  const configs: Array<Record<string, unknown>> = [];
  const producer = {
    connect: jest.fn(async () => undefined),
    disconnect: jest.fn(async () => undefined),
    sendBatch: jest.fn(send),
  };
  const kafka: KafkaClientLike = {
    producer: (config) => {
      configs.push(config);
      return producer;
    },
  };
  return { kafka, producer, configs };
}

describe('KafkaPublisher', () => {
  it('creates an idempotent producer (one request in flight) whatever the producer settings say', async () => {
    const { kafka, configs } = fakeKafka();
    const p = new KafkaPublisher({
      kafka,
      producer: { idempotent: false, maxInFlightRequests: 10 },
    });
    await p.publish(message('a'));
    expect(configs[0]).toMatchObject({ idempotent: true, maxInFlightRequests: 1 });
  });

  it('sends a batch in one sendBatch with acks from all in-sync replicas: key, JSON value, headers', async () => {
    const { kafka, producer } = fakeKafka();
    const p = new KafkaPublisher({ kafka, topic: 'payments' });
    const outcomes = await p.publishBatch([message('a'), message('b', { partitionKey: null })]);
    expect(outcomes).toEqual([undefined, undefined]);
    expect(producer.connect).toHaveBeenCalledTimes(1);
    expect(producer.sendBatch).toHaveBeenCalledTimes(1);
    const batch = producer.sendBatch.mock.calls[0][0];
    expect(batch.acks).toBe(-1);
    expect(batch.topicMessages).toEqual([
      {
        topic: 'payments',
        messages: [
          {
            key: 'key-a',
            value: JSON.stringify({ id: 'a', amount: 1 }),
            headers: {
              'message-id': 'a',
              'message-type': 'payment.captured',
              traceparent: '00-abc-def-01',
            },
            timestamp: '1700000000000',
          },
          expect.objectContaining({ key: null }),
        ],
      },
    ]);
  });

  it('publishes to the message type by default, one topic entry per topic', async () => {
    const { kafka, producer } = fakeKafka();
    const p = new KafkaPublisher({ kafka });
    await p.publishBatch([message('a'), message('b', { type: 'payment.refunded' }), message('c')]);
    const topics = producer.sendBatch.mock.calls[0][0].topicMessages.map(
      (t: { topic: string; messages: unknown[] }) => [t.topic, t.messages.length],
    );
    expect(topics).toEqual([
      ['payment.captured', 2],
      ['payment.refunded', 1],
    ]);
  });

  it('fails every message of a batch Kafka did not acknowledge, and connects again next time', async () => {
    const error = new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('down'), retries);
    const { kafka, producer } = fakeKafka(async () => {
      throw error;
    });
    producer.connect.mockRejectedValueOnce(new KafkaJSConnectionError('refused'));
    const p = new KafkaPublisher({ kafka, topic: 't' });
    const first = await p.publishBatch([message('a')]);
    expect(first[0]).toBeInstanceOf(KafkaJSConnectionError);
    const second = await p.publishBatch([message('a'), message('b')]);
    expect(second).toEqual([error, error]);
    expect(producer.connect).toHaveBeenCalledTimes(2);
    await expect(p.publish(message('c'))).rejects.toBe(error);
  });

  it('fails only the message whose topic cannot be told', async () => {
    const { kafka, producer } = fakeKafka();
    const p = new KafkaPublisher({
      kafka,
      topic: (m) => (m.id === 'bad' ? '' : 'orders'),
    });
    const outcomes = await p.publishBatch([message('a'), message('bad')]);
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[1]?.message).toMatch(/no topic for message bad/);
    expect(producer.sendBatch.mock.calls[0][0].topicMessages[0].messages).toHaveLength(1);
  });

  it('refuses options without brokers or a client, naming the fix', () => {
    expect(() => new KafkaPublisher({})).toThrow(/brokers \(or kafka\) is required/);
    expect(() => new KafkaPublisher({ brokers: [] })).toThrow(/new KafkaPublisher\(\{ brokers/);
  });

  it('disconnects on application shutdown once connected, and publishes no more', async () => {
    const { kafka, producer } = fakeKafka();
    const p = new KafkaPublisher({ kafka, topic: 't' });
    await p.publishBatch([message('a')]);
    await p.onApplicationShutdown();
    expect(producer.disconnect).toHaveBeenCalledTimes(1);
    const [outcome] = await p.publishBatch([message('b')]);
    expect(outcome?.message).toMatch(/closed/);
  });

  it('names npm install kafkajs when the package is missing', () => {
    jest.isolateModules(() => {
      jest.doMock('kafkajs', () => {
        throw new Error("Cannot find module 'kafkajs'");
      });
      const { KafkaPublisher: Isolated } = require('../../lib/outbox/publishers/kafka.publisher');
      expect(() => new Isolated({ brokers: ['127.0.0.1:9092'] })).toThrow(/npm install kafkajs/);
      jest.dontMock('kafkajs');
    });
  });
});

describe('isKafkaUnavailableError', () => {
  it('recognises connection errors, their retries exhausted, and missing leaders or replicas', () => {
    expect(isKafkaUnavailableError(new KafkaJSConnectionError('refused'))).toBe(true);
    expect(
      isKafkaUnavailableError(
        new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('refused'), retries),
      ),
    ).toBe(true);
    const notEnough = protocolError('NOT_ENOUGH_REPLICAS', 19);
    expect(isKafkaUnavailableError(new KafkaJSNumberOfRetriesExceeded(notEnough, retries))).toBe(
      true,
    );
  });

  it('leaves faults of the message and other errors alone', () => {
    expect(isKafkaUnavailableError(new Error('boom'))).toBe(false);
    expect(isKafkaUnavailableError(undefined)).toBe(false);
    const tooLarge = protocolError('MESSAGE_TOO_LARGE', 10);
    expect(isKafkaUnavailableError(tooLarge)).toBe(false);
    expect(isKafkaUnavailableError(new KafkaJSNonRetriableError(tooLarge))).toBe(false);
  });
});

/**
 * The classification the relay applies to a failed Kafka publish (isPublisherUnavailable with a
 * KafkaPublisher), on kafkajs' own error classes; protocol errors built by kafkajs from the
 * broker's error codes (`createErrorFromCode`, what its decoders throw).
 */
describe('KafkaPublisher.isUnavailable: what counts as an attempt', () => {
  const { createErrorFromCode } = require('kafkajs/src/protocol/error');
  const code = (n: number): Error => createErrorFromCode(n);
  const publisher = () => new KafkaPublisher({ kafka: fakeKafka().kafka, topic: 't' });
  const exhausted = (e: Error) => new KafkaJSNumberOfRetriesExceeded(e, retries);

  it.each([
    ['a connection refused', new KafkaJSConnectionError('Connection error: ECONNREFUSED')],
    [
      'a connection closed',
      new (require('kafkajs').KafkaJSConnectionClosedError)('Closed', { host: 'h', port: 1 }),
    ],
    ['a request time-out', new KafkaJSRequestTimeoutError('Request Produce(key: 0) timed out')],
    ['LEADER_NOT_AVAILABLE (5)', code(5)],
    ['NOT_LEADER_FOR_PARTITION (6)', code(6)],
    ['REQUEST_TIMED_OUT (7)', code(7)],
    ['NOT_ENOUGH_REPLICAS (19)', code(19)],
    ['NOT_ENOUGH_REPLICAS_AFTER_APPEND (20)', code(20)],
    ['OUT_OF_ORDER_SEQUENCE_NUMBER (45)', code(45)],
    ['FENCED_LEADER_EPOCH (74)', code(74)],
    ['retries exhausted on LEADER_NOT_AVAILABLE', exhausted(code(5))],
    ['retries exhausted on a request time-out', exhausted(new KafkaJSRequestTimeoutError('t/o'))],
    ['retries exhausted on a lost connection', exhausted(new KafkaJSConnectionError('lost'))],
    [
      'one broker of the batch without a leader (KafkaJSAggregateError)',
      new KafkaJSAggregateError('2 errors', [code(10), exhausted(code(6))]),
    ],
  ])('%s: the cluster is unavailable, no attempt counted', (_, error) => {
    expect(isKafkaUnavailableError(error)).toBe(true);
    expect(isPublisherUnavailable(publisher(), error)).toBe(true);
  });

  it.each([
    ['MESSAGE_TOO_LARGE (10)', code(10)],
    ['RECORD_LIST_TOO_LARGE (18)', code(18)],
    ['INVALID_TOPIC_EXCEPTION (17)', code(17)],
    ['TOPIC_AUTHORIZATION_FAILED (29)', code(29)],
    ['CORRUPT_MESSAGE (2)', code(2)],
    ['INVALID_RECORD (87)', code(87)],
    ['retries exhausted on UNKNOWN_TOPIC_OR_PARTITION (3)', exhausted(code(3))],
    ['a non-retriable wrap of MESSAGE_TOO_LARGE', new KafkaJSNonRetriableError(code(10))],
    ['an error of the app', new Error('boom')],
  ])('%s: refused for the message, counts as an attempt', (_, error) => {
    expect(isKafkaUnavailableError(error)).toBe(false);
    expect(isPublisherUnavailable(publisher(), error)).toBe(false);
  });

  it("counts the relay's time-out as no attempt while the batch still waits for Kafka, and as one once it settled", async () => {
    let settle!: (e?: Error) => void;
    const { kafka, producer } = fakeKafka(
      () =>
        new Promise<unknown>((resolve, reject) => (settle = (e) => (e ? reject(e) : resolve([])))),
    );
    const p = new KafkaPublisher({ kafka, topic: 't' });
    // The relay gives up after its publishTimeoutMs; kafkajs goes on retrying the leader election.
    const [timedOut] = await publishWithin(p, [message('a')], 20);
    expect(timedOut).toBeInstanceOf(OutboxPublishTimeoutError);
    expect(isPublisherUnavailable(p, timedOut!)).toBe(true);
    settle(code(10));
    await new Promise((r) => setImmediate(r));
    // A time-out with nothing of this publisher waiting is not the cluster's.
    expect(isPublisherUnavailable(p, new OutboxPublishTimeoutError('t/o'))).toBe(false);
    expect(producer.sendBatch).toHaveBeenCalledTimes(1);
  });
});

describe('KafkaPublisher with a batch still unacknowledged', () => {
  it('refuses the next batch at once (nothing queued behind it) and takes batches again once it settled', async () => {
    let release!: () => void;
    const { kafka, producer } = fakeKafka(
      () => new Promise<unknown>((resolve) => (release = () => resolve([]))),
    );
    const p = new KafkaPublisher({ kafka, topic: 't' });
    const first = p.publishBatch([message('a')]);
    await new Promise((r) => setImmediate(r));
    const [refused] = await p.publishBatch([message('b')]);
    expect(refused).toBeInstanceOf(KafkaBatchInFlightError);
    expect(isKafkaUnavailableError(refused)).toBe(true);
    expect(producer.sendBatch).toHaveBeenCalledTimes(1);
    release();
    expect(await first).toEqual([undefined]);
    producer.sendBatch.mockImplementation(async () => []);
    expect(await p.publishBatch([message('b')])).toEqual([undefined]);
  });
});

describe('KafkaPublisher after a failed send', () => {
  it('sends the next batch with a new producer (a new producer id, sequence numbers from 0)', async () => {
    const { kafka, producer, configs } = fakeKafka();
    producer.sendBatch.mockRejectedValueOnce(new KafkaJSConnectionError('lost'));
    const p = new KafkaPublisher({ kafka, topic: 't' });
    expect((await p.publishBatch([message('a')]))[0]).toBeInstanceOf(KafkaJSConnectionError);
    expect(producer.disconnect).toHaveBeenCalledTimes(1);
    expect(await p.publishBatch([message('a')])).toEqual([undefined]);
    expect(configs).toHaveLength(2);
    expect(await p.publishBatch([message('b')])).toEqual([undefined]);
    expect(configs).toHaveLength(2);
  });
});

describe('KafkaPublisher when kafkajs resolves without every partition acknowledged', () => {
  /** A producer that partitions like kafkajs (through the configured partitioner) and answers with `acked`. */
  function partitioningKafka(acked: (partitions: number[]) => number[]) {
    const fake = fakeKafka();
    fake.producer.sendBatch.mockImplementation(async (batch) => {
      const partitioner = (fake.configs.at(-1)!.createPartitioner as () => any)();
      const partitions = new Set<number>();
      for (const { topic, messages } of batch.topicMessages) {
        for (const m of messages) {
          partitions.add(
            partitioner({
              topic,
              message: m,
              partitionMetadata: [0, 1, 2].map((p) => ({ partitionId: p, leader: p })),
            }),
          );
        }
      }
      return acked([...partitions]).map((partition) => ({
        topicName: 't',
        partition,
        errorCode: 0,
      }));
    });
    return fake;
  }
  const keys = ['a', 'b', 'c', 'd', 'e', 'f'].map((k) => message(k, { partitionKey: `pay-${k}` }));

  it('fails the batch (as an outage) when a partition it wrote to is missing from the acknowledgement', async () => {
    const { kafka, configs } = partitioningKafka((ps) => ps.slice(1));
    const p = new KafkaPublisher({ kafka, topic: 't' });
    const outcomes = await p.publishBatch(keys);
    expect(outcomes.every((o) => o instanceof KafkaPartitionsUnacknowledgedError)).toBe(true);
    expect((outcomes[0] as KafkaPartitionsUnacknowledgedError).partitions).toHaveLength(1);
    expect(isKafkaUnavailableError(outcomes[0])).toBe(true);
    // The producer was replaced: the retried batch gets a new producer id.
    await p.publishBatch(keys);
    expect(configs).toHaveLength(2);
  });

  it('confirms the batch when every partition it wrote to is acknowledged', async () => {
    const { kafka } = partitioningKafka((ps) => ps);
    const p = new KafkaPublisher({ kafka, topic: 't' });
    expect(await p.publishBatch(keys)).toEqual(keys.map(() => undefined));
  });
});
