/**
 * There is no Azure Service Bus on this machine: ServiceBusPublisher is tested against the SDK's
 * documented sender interface. `FakeSender` implements `ServiceBusSender` and `FakeBatch`
 * implements `ServiceBusMessageBatch` from @azure/service-bus (so the compiler checks them
 * against the real SDK types), and they enforce the documented rules: messageId, sessionId and
 * partitionKey at most 128 characters; all messages of one sendMessages() call with the same
 * sessionId and partitionKey; a batch refuses a message once its size limit is reached.
 */
import type {
  ServiceBusMessage,
  ServiceBusMessageBatch,
  ServiceBusSender,
} from '@azure/service-bus';

type Sendable = Parameters<ServiceBusSender['sendMessages']>[0];
type Addable = Parameters<ServiceBusMessageBatch['tryAddMessage']>[0];
import { randomUUID } from 'node:crypto';
import { ServiceBusPublisher } from '../../lib';
import type { OutboxMessage, ServiceBusSenderLike } from '../../lib';

class FakeBatch implements ServiceBusMessageBatch {
  readonly messages: ServiceBusMessage[] = [];
  sizeInBytes = 0;
  constructor(readonly maxSizeInBytes: number) {}
  get count(): number {
    return this.messages.length;
  }
  tryAddMessage(message: Addable): boolean {
    const m = message as ServiceBusMessage;
    const size = Buffer.byteLength(JSON.stringify(m.body)) + 64;
    if (this.sizeInBytes + size > this.maxSizeInBytes) return false;
    this.sizeInBytes += size;
    this.messages.push(m);
    return true;
  }
}

class FakeSender implements ServiceBusSender {
  identifier = 'fake';
  entityPath = 'payments';
  isClosed = false;
  /** One entry per sendMessages() call that reached "Service Bus". */
  readonly sends: ServiceBusMessage[][] = [];
  failWhen: (messages: ServiceBusMessage[]) => boolean = () => false;

  constructor(private readonly maxBatchBytes = 1024) {}

  async sendMessages(messages: Sendable): Promise<void> {
    const list = (
      messages instanceof FakeBatch
        ? messages.messages
        : Array.isArray(messages)
          ? messages
          : [messages]
    ) as ServiceBusMessage[];
    for (const m of list) {
      for (const field of ['messageId', 'sessionId', 'partitionKey'] as const) {
        const v = m[field];
        if (typeof v === 'string' && v.length > 128) throw new Error(`${field} longer than 128`);
      }
    }
    const sessions = new Set(list.map((m) => m.sessionId));
    const partitions = new Set(list.map((m) => m.partitionKey));
    if (sessions.size > 1 || partitions.size > 1) {
      throw new Error('all messages of one send must share sessionId and partitionKey');
    }
    if (this.failWhen(list)) throw new Error('ServiceBusError: ServiceUnavailable');
    this.sends.push(list);
  }

  async createMessageBatch(): Promise<ServiceBusMessageBatch> {
    return new FakeBatch(this.maxBatchBytes);
  }

  async scheduleMessages(): Promise<never[]> {
    throw new Error('not used by the publisher');
  }

  async cancelScheduledMessages(): Promise<void> {
    throw new Error('not used by the publisher');
  }

  async close(): Promise<void> {
    this.isClosed = true;
  }
}

const message = (over: Partial<OutboxMessage> = {}): OutboxMessage => {
  const id = over.id ?? randomUUID();
  const partitionKey = over.partitionKey === undefined ? 'pay-1' : over.partitionKey;
  return {
    id,
    type: 'payment.captured',
    payload: { paymentId: partitionKey, amount: 10 },
    headers: {
      'message-id': id,
      'message-type': 'payment.captured',
      ...(partitionKey ? { 'partition-key': partitionKey } : {}),
      'x-tenant': 'acme',
    },
    partitionKey,
    seq: '1',
    attempts: 0,
    createdAt: new Date(),
    ...over,
  };
};

describe('ServiceBusPublisher (against the @azure/service-bus sender interface, no Service Bus here)', () => {
  it('a real ServiceBusSender fits the sender type the publisher takes', () => {
    const real = new FakeSender() as ServiceBusSender;
    const asPort: ServiceBusSenderLike = real;
    expect(asPort).toBe(real);
  });

  it('maps the outbox message: messageId = outbox id (duplicate detection), body = payload, subject = type, headers as application properties, key as partitionKey', async () => {
    const sender = new FakeSender();
    const m = message();
    await new ServiceBusPublisher(sender).publish(m);
    expect(sender.sends).toHaveLength(1);
    expect(sender.sends[0][0]).toEqual({
      body: m.payload,
      contentType: 'application/json',
      messageId: m.id,
      subject: 'payment.captured',
      applicationProperties: m.headers,
      partitionKey: 'pay-1',
    });
  });

  it('with sessions, the partition key becomes the sessionId (ordered delivery per key)', async () => {
    const sender = new FakeSender();
    await new ServiceBusPublisher(sender, { sessions: true }).publish(
      message({ partitionKey: 'acct-9' }),
    );
    expect(sender.sends[0][0].sessionId).toBe('acct-9');
    expect(sender.sends[0][0].partitionKey).toBeUndefined();
  });

  it('a message without a partition key has neither sessionId nor partitionKey', async () => {
    const sender = new FakeSender();
    await new ServiceBusPublisher(sender, { sessions: true }).publish(
      message({ partitionKey: null }),
    );
    expect(sender.sends[0][0].sessionId).toBeUndefined();
    expect(sender.sends[0][0].partitionKey).toBeUndefined();
  });

  it('batches: one send per session, split when a batch is full; every message confirmed', async () => {
    const sender = new FakeSender(600);
    const messages = [
      ...Array.from({ length: 7 }, () => message({ partitionKey: 'a' })),
      ...Array.from({ length: 3 }, () => message({ partitionKey: 'b' })),
      message({ partitionKey: null }),
    ];
    const outcomes = await new ServiceBusPublisher(sender, { sessions: true }).publishBatch(
      messages,
    );
    expect(outcomes).toEqual(messages.map(() => undefined));
    const sent = sender.sends.flat().map((m) => m.messageId);
    expect([...sent].sort()).toEqual(messages.map((m) => m.id).sort());
    for (const send of sender.sends) expect(new Set(send.map((m) => m.sessionId)).size).toBe(1);
    expect(sender.sends.filter((s) => s[0].sessionId === 'a').length).toBeGreaterThan(1);
    // Within a session, the batch order is the outbox order.
    expect(
      sender.sends
        .filter((s) => s[0].sessionId === 'a')
        .flat()
        .map((m) => m.messageId),
    ).toEqual(messages.slice(0, 7).map((m) => m.id));
  });

  it('reports failures per message: a key over 128 characters, and the messages of a send that failed', async () => {
    const sender = new FakeSender();
    sender.failWhen = (list) => list[0].partitionKey === 'down';
    const ok = message({ partitionKey: 'up' });
    const tooLong = message({ partitionKey: 'k'.repeat(129) });
    const down = message({ partitionKey: 'down' });
    const outcomes = await new ServiceBusPublisher(sender).publishBatch([ok, tooLong, down]);
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[1]?.message).toMatch(/128 characters/);
    expect(outcomes[2]?.message).toMatch(/ServiceUnavailable/);
    await expect(new ServiceBusPublisher(sender).publish(down)).rejects.toThrow(
      /ServiceUnavailable/,
    );
  });
});
