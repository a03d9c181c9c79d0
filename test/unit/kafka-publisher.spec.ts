import {
  KafkaJSConnectionError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
} from 'kafkajs';
import { isKafkaUnavailableError, KafkaBatchInFlightError, KafkaPublisher } from '../../lib';
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
