import {
  ClientProxy,
  ClientRMQ,
  MqttRecord,
  NatsRecord,
  type ReadPacket,
  RmqRecord,
  type WritePacket,
} from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { ClientProxyPublisher } from '../../lib';
import type { OutboxMessage } from '../../lib';

/** A ClientProxy that keeps what it is asked to emit (pure mapping test; the real brokers are in test/integration). */
class RecordingClient extends ClientProxy {
  readonly events: ReadPacket[] = [];
  failNext = false;
  async connect(): Promise<void> {}
  async close(): Promise<void> {}
  unwrap<T>(): T {
    return undefined as T;
  }
  protected publish(_packet: ReadPacket, _callback: (packet: WritePacket) => void): () => void {
    throw new Error('not used');
  }
  protected async dispatchEvent<T = any>(packet: ReadPacket): Promise<T> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('broker refused');
    }
    this.events.push(packet);
    return undefined as T;
  }
}

const message = (): OutboxMessage => {
  const id = randomUUID();
  return {
    id,
    type: 'payment.captured',
    payload: { paymentId: 'p-1' },
    headers: {
      'message-id': id,
      'message-type': 'payment.captured',
      'partition-key': 'p-1',
      'x-tenant': 'acme',
    },
    partitionKey: 'p-1',
    seq: '7',
    attempts: 0,
    createdAt: new Date('2026-01-02T03:04:05.000Z'),
  };
};

describe('ClientProxyPublisher: how each transport carries the message id and headers', () => {
  it('RabbitMQ: AMQP messageId/type properties, headers, persistent, with a confirm timeout', async () => {
    const client = new RecordingClient();
    const m = message();
    await new ClientProxyPublisher(client, { transport: 'rmq', confirmTimeoutMs: 1234 }).publish(m);
    const record = client.events[0].data as RmqRecord;
    expect(client.events[0].pattern).toBe('payment.captured');
    expect(record).toBeInstanceOf(RmqRecord);
    expect(record.data).toEqual(m.payload);
    expect(record.options).toMatchObject({
      messageId: m.id,
      type: 'payment.captured',
      headers: m.headers,
      persistent: true,
      timeout: 1234,
    });
  });

  it('NATS: NATS headers with Nats-Msg-Id', async () => {
    const client = new RecordingClient();
    const m = message();
    await new ClientProxyPublisher(client, { transport: 'nats' }).publish(m);
    const record = client.events[0].data as NatsRecord;
    expect(record).toBeInstanceOf(NatsRecord);
    expect(record.headers.get('message-id')).toBe(m.id);
    expect(record.headers.get('Nats-Msg-Id')).toBe(m.id);
    expect(record.headers.get('x-tenant')).toBe('acme');
  });

  it('Kafka: the partition key is the record key, headers as record headers', async () => {
    const client = new RecordingClient();
    const m = message();
    await new ClientProxyPublisher(client, { transport: 'kafka' }).publish(m);
    expect(client.events[0].data).toEqual({ key: 'p-1', value: m.payload, headers: m.headers });
  });

  it('MQTT: QoS 1 with the headers as MQTT 5 user properties', async () => {
    const client = new RecordingClient();
    const m = message();
    await new ClientProxyPublisher(client, { transport: 'mqtt' }).publish(m);
    const record = client.events[0].data as MqttRecord;
    expect(record).toBeInstanceOf(MqttRecord);
    expect(record.options).toMatchObject({ qos: 1, properties: { userProperties: m.headers } });
  });

  it('transports without headers (Redis, TCP, custom) get the envelope by default', async () => {
    const client = new RecordingClient();
    const m = message();
    await new ClientProxyPublisher(client).publish(m);
    expect(client.events[0].data).toEqual({
      id: m.id,
      type: m.type,
      partitionKey: 'p-1',
      headers: m.headers,
      payload: m.payload,
    });
  });

  it('uses the pattern function and reports failures per message of a batch', async () => {
    const client = new RecordingClient();
    const publisher = new ClientProxyPublisher(client, { pattern: (m) => `events.${m.type}` });
    client.failNext = true;
    const outcomes = await publisher.publishBatch([message(), message()]);
    expect(outcomes[0]?.message).toBe('broker refused');
    expect(outcomes[1]).toBeUndefined();
    expect(client.events[0].pattern).toBe('events.payment.captured');
  });
});

describe('ClientProxyPublisher on RabbitMQ: a failed channel setup does not end the process', () => {
  const channelEnded = () => new Error('Channel ended, no reply will be forthcoming');

  it("listens to every channel of a ClientRMQ's connections, both of its first connect included", () => {
    const client = new ClientRMQ({ urls: ['amqp://127.0.0.1:1'], queue: 'q' });
    // amqp-connection-manager's connection as ClientRMQ uses it: each `createChannel()` makes a
    // ChannelWrapper, an EventEmitter that emits 'error' when its setup fails.
    const channels: EventEmitter[] = [];
    const connection = Object.assign(new EventEmitter(), {
      createChannel: () => {
        const channel = new EventEmitter();
        channels.push(channel);
        return channel;
      },
    });
    (client as unknown as { createClient(): EventEmitter }).createClient = () => connection;
    new ClientProxyPublisher(client as unknown as ClientProxy);
    void client.connect();
    connection.emit('connect');
    expect(channels.length).toBeGreaterThanOrEqual(1);
    for (const channel of channels) {
      expect(channel.listenerCount('error')).toBe(1);
      expect(() => channel.emit('error', channelEnded())).not.toThrow();
    }
  });

  it('listens to a channel there at construction, and to one made later after the next batch', async () => {
    const client = new RecordingClient();
    const internals = client as unknown as { channel?: EventEmitter };
    const first = new EventEmitter();
    internals.channel = first;
    const publisher = new ClientProxyPublisher(client, { transport: 'rmq' });
    expect(first.listenerCount('error')).toBe(1);
    const second = new EventEmitter();
    internals.channel = second;
    expect(() => second.emit('error', channelEnded())).toThrow('Channel ended');
    await publisher.publish(message());
    await publisher.publishBatch([message(), message()]);
    expect(second.listenerCount('error')).toBe(1);
    expect(first.listenerCount('error')).toBe(1);
    expect(() => second.emit('error', channelEnded())).not.toThrow();
    expect(client.events).toHaveLength(3);
  });
});
