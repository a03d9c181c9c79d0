import { KafkaContext, MqttContext, NatsContext, RmqContext } from '@nestjs/microservices';
import { headers as natsHeaders } from 'nats';
import { defaultMessageId, InboxMessageIdMissingError } from '../../lib';
import type { ConsumedMessage } from '../../lib';
import { messageIdOf } from '../../lib/inbox/inbox-consumer';

const rpc = (context: unknown, data: unknown = {}): ConsumedMessage => ({
  kind: 'rpc',
  data,
  context,
  args: [data, context],
});

describe('defaultMessageId', () => {
  it('reads the AMQP messageId property of a RabbitMQ delivery, else its message-id header', () => {
    const withProperty = new RmqContext([
      { properties: { messageId: 'm-1', headers: { 'message-id': 'other' } } },
      {},
      'p',
    ]);
    expect(defaultMessageId(rpc(withProperty))).toBe('m-1');
    const headerOnly = new RmqContext([
      { properties: { headers: { 'Message-Id': 'm-2' } } },
      {},
      'p',
    ]);
    expect(defaultMessageId(rpc(headerOnly))).toBe('m-2');
  });

  it('reads the message-id header of a NATS message, else Nats-Msg-Id', () => {
    const h = natsHeaders();
    h.set('message-id', 'n-1');
    expect(defaultMessageId(rpc(new NatsContext(['subject', h])))).toBe('n-1');
    const js = natsHeaders();
    js.set('Nats-Msg-Id', 'n-2');
    expect(defaultMessageId(rpc(new NatsContext(['subject', js])))).toBe('n-2');
  });

  it('reads the message-id header of a Kafka record (Buffer) and an MQTT 5 user property', () => {
    const kafka = new KafkaContext([
      { headers: { 'message-id': Buffer.from('k-1') } } as any,
      0,
      'topic',
      {} as any,
      {} as any,
      {} as any,
    ]);
    expect(defaultMessageId(rpc(kafka))).toBe('k-1');
    const mqtt = new MqttContext([
      'topic',
      { properties: { userProperties: { 'message-id': 'q-1' } } } as any,
    ]);
    expect(defaultMessageId(rpc(mqtt))).toBe('q-1');
  });

  it("falls back to the payload's messageId, or its envelope headers", () => {
    expect(defaultMessageId({ kind: 'event', data: { messageId: 'e-1' }, args: [] })).toBe('e-1');
    expect(
      defaultMessageId({
        kind: 'event',
        data: { id: 'x', headers: { 'message-id': 'e-2' } },
        args: [],
      }),
    ).toBe('e-2');
    expect(defaultMessageId({ kind: 'event', data: { messageId: 42 }, args: [] })).toBe('42');
  });

  it('finds nothing in a message without an id, and the consumer refuses it with a clear error', () => {
    const none = rpc(new RmqContext([{ properties: {} }, {}, 'p']), { amount: 1 });
    expect(defaultMessageId(none)).toBeUndefined();
    expect(defaultMessageId({ kind: 'event', data: 'text', args: [] })).toBeUndefined();
    const def = { consumer: 'Ledger.onCaptured', options: {} };
    expect(() => messageIdOf(def, none)).toThrow(InboxMessageIdMissingError);
    expect(() => messageIdOf(def, none)).toThrow(
      /Ledger.onCaptured: the message carries no message id .*RabbitMQ messageId property/,
    );
    expect(() => messageIdOf({ consumer: 'c', options: { messageId: () => '' } }, none)).toThrow(
      /the configured messageId extractor/,
    );
    expect(
      messageIdOf({ consumer: 'c', options: { messageId: (m) => (m.data as any).amount } }, none),
    ).toBe('1');
  });
});
