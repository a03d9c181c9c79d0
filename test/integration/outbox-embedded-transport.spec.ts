import { Controller, INestApplication, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { OutboxPublisher } from '../../lib';
import type { OutboxMessage } from '../../lib';
import { EmbeddedContext, incomingMessage } from '../../sample-app/messaging';
import { MessagingModule } from '../../sample-app/messaging/messaging.module';
import { connectMessaging } from '../../sample-app/messaging/messaging.microservice';

const seen: Array<{ data: unknown; ctx: EmbeddedContext }> = [];
const failOnce = new Set<string>();

@Controller()
class DemoConsumer {
  @EventPattern('demo.happened')
  handle(@Payload() data: unknown, @Ctx() ctx: EmbeddedContext) {
    if (failOnce.delete(ctx.getMessageId())) throw new Error('consumer failed');
    seen.push({ data, ctx });
  }
}

@Module({ imports: [MessagingModule.forRoot({ kind: 'embedded' })], controllers: [DemoConsumer] })
class DemoModule {}

const message = (over: Partial<OutboxMessage> = {}): OutboxMessage => {
  const id = randomUUID();
  return {
    id,
    type: 'demo.happened',
    payload: { n: 1 },
    headers: {
      'message-id': id,
      'message-type': 'demo.happened',
      'partition-key': 'k-1',
      'x-tenant': 'acme',
    },
    partitionKey: 'k-1',
    seq: '1',
    attempts: 0,
    createdAt: new Date(),
    ...over,
  };
};

describe('sample app messaging: the embedded transport (in-process EventEmitter2)', () => {
  let app: INestApplication;
  let publisher: OutboxPublisher;

  beforeAll(async () => {
    app = await NestFactory.create(DemoModule, { logger: false });
    await connectMessaging(app);
    await app.init();
    publisher = app.get<OutboxPublisher>(OutboxPublisher);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('delivers a published message to @EventPattern handlers with its id, headers and partition key', async () => {
    const m = message();
    await publisher.publish(m);
    const got = seen.find((s) => s.ctx.getMessageId() === m.id)!;
    expect(got.data).toEqual({ n: 1 });
    expect(got.ctx.getSubject()).toBe('demo.happened');
    expect(got.ctx.getHeaders().get('message-id')).toBe(m.id);
    expect(got.ctx.getPartitionKey()).toBe('k-1');
    expect(incomingMessage(got.data, got.ctx)).toEqual({
      id: m.id,
      type: 'demo.happened',
      partitionKey: 'k-1',
      headers: m.headers,
      payload: { n: 1 },
    });
  });

  it('fails the publish when a handler throws, so the relay delivers the message again later', async () => {
    const m = message();
    failOnce.add(m.id);
    await expect(publisher.publish(m)).rejects.toThrow();
    expect(seen.some((s) => s.ctx.getMessageId() === m.id)).toBe(false);
    await publisher.publish(m);
    expect(seen.filter((s) => s.ctx.getMessageId() === m.id)).toHaveLength(1);
  });

  it('confirms a message no handler listens to (like a broker with no queue bound)', async () => {
    await expect(publisher.publish(message({ type: 'nobody.listens' }))).resolves.toBeUndefined();
  });
});
