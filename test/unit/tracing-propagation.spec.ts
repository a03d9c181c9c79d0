import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ServiceBusPublisher } from '../../lib';
import type { OutboxMessage } from '../../lib';
import type { ServiceBusMessageLike } from '../../lib/outbox/publishers/service-bus.publisher';
import { messageHeader, messagingSystemOf } from '../../lib/inbox/message-id.extractor';
import { traceConsume } from '../../lib/observability/inbox.tracing';
import { traceOutboxAdd, tracePublish } from '../../lib/observability/outbox.tracing';

/**
 * The trace context's way through the outbox, piece by piece: stored by add(), re-parented and
 * re-injected by the relay, carried in Service Bus application properties, read back from each
 * transport's context by the inbox. Pure logic over the SDK's in-memory exporter; the whole flow
 * over real brokers and databases is test/integration/ops-tracing.spec.ts.
 */
const traceparent = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('without an SDK', () => {
  it('add() stores no context and the relay injects none', () => {
    const rows = [{ id: 'm-1', type: 'payment.captured', headers: null as string | null }];
    traceOutboxAdd(rows).end();
    expect(rows[0].headers).toBeNull();
    const m = { id: 'm-1', type: 'payment.captured', headers: { 'message-id': 'm-1' } };
    const traced = tracePublish(m, 'rabbitmq', '1');
    expect(traced.message).toBe(m);
    traced.end(undefined, 1, false);
  });
});

describe('with an SDK', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => provider.register());
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });
  beforeEach(() => exporter.reset());

  it('add() stores the create span context; an app-set traceparent wins', () => {
    const parent = propagation.extract(context.active(), {
      traceparent: traceparent(TRACE, PARENT),
    });
    const rows = [
      { id: 'm-1', type: 'payment.captured', headers: JSON.stringify({ 'x-tenant': 'acme' }) },
      { id: 'm-2', type: 'payment.captured', headers: JSON.stringify({ traceparent: 'mine' }) },
    ];
    context.with(parent, () => traceOutboxAdd(rows)).end();
    const [create1] = exporter.getFinishedSpans();
    const stored = JSON.parse(rows[0].headers!);
    expect(stored).toEqual({
      'x-tenant': 'acme',
      traceparent: traceparent(TRACE, create1.spanContext().spanId),
    });
    expect(create1.parentSpanContext?.spanId).toBe(PARENT);
    expect(JSON.parse(rows[1].headers!).traceparent).toBe('mine');
  });

  it('the relay parents its send span on the stored context and injects its own; a failure is recorded', () => {
    const m: OutboxMessage = {
      id: 'm-1',
      type: 'payment.captured',
      payload: {},
      headers: { 'message-id': 'm-1', traceparent: traceparent(TRACE, PARENT) },
      partitionKey: null,
      seq: '7',
      attempts: 2,
      createdAt: new Date(),
    };
    const traced = tracePublish(m, 'servicebus', m.seq);
    traced.end(new Error('broker refused'), 3, true);
    const [send] = exporter.getFinishedSpans();
    expect(send.name).toBe('send payment.captured');
    expect(send.spanContext().traceId).toBe(TRACE);
    expect(send.parentSpanContext?.spanId).toBe(PARENT);
    expect(send.attributes).toMatchObject({
      'messaging.system': 'servicebus',
      'messaging.operation.type': 'send',
      'outbox.attempt': 3,
      'outbox.dead': true,
      'error.type': 'Error',
    });
    expect(send.status.code).toBe(2);
    expect(traced.message.headers.traceparent).toBe(traceparent(TRACE, send.spanContext().spanId));
    expect(m.headers.traceparent).toBe(traceparent(TRACE, PARENT)); // the claimed row's message is not changed
  });

  it('Service Bus carries the context in applicationProperties', async () => {
    const sent: ServiceBusMessageLike[] = [];
    const publisher = new ServiceBusPublisher({
      sendMessages: async (x) => void sent.push(x as ServiceBusMessageLike),
      createMessageBatch: async () => {
        throw new Error('not used');
      },
    });
    await publisher.publish({
      id: 'm-1',
      type: 'payment.captured',
      payload: {},
      headers: { 'message-id': 'm-1', traceparent: traceparent(TRACE, PARENT) },
      partitionKey: null,
      seq: '1',
      attempts: 0,
      createdAt: new Date(),
    });
    expect(sent[0].applicationProperties?.traceparent).toBe(traceparent(TRACE, PARENT));
    expect(publisher.messagingSystem).toBe('servicebus');
  });

  it.each([
    [
      'RabbitMQ (AMQP headers)',
      {
        getChannelRef: () => ({}),
        getMessage: () => ({ properties: { headers: { traceparent: 'T' } } }),
      },
      undefined,
    ],
    [
      'NATS (MsgHdrs)',
      { getSubject: () => 's', getHeaders: () => new Map([['traceparent', 'T']]) },
      undefined,
    ],
    [
      'Kafka (Buffer headers)',
      { getPartition: () => 0, getMessage: () => ({ headers: { traceparent: Buffer.from('T') } }) },
      undefined,
    ],
    [
      'MQTT 5 (user properties)',
      { getPacket: () => ({ properties: { userProperties: { traceparent: 'T' } } }) },
      undefined,
    ],
    ['an in-process listener (the outbox message)', undefined, { headers: { traceparent: 'T' } }],
  ])('the inbox reads the context from %s', (_, ctx, data) => {
    expect(messageHeader({ kind: 'rpc', data, context: ctx, args: [] }, 'traceparent')).toBe('T');
  });

  it('the consumer span continues the message trace and marks a skipped duplicate', () => {
    const headers: Record<string, string> = { traceparent: traceparent(TRACE, PARENT) };
    const traced = traceConsume('ledger', (n) => headers[n], {
      system: messagingSystemOf(undefined),
      destination: 'payment.captured',
    });
    traced.messageId('m-1');
    traced.settled('duplicate', true, 1);
    const [span] = exporter.getFinishedSpans();
    expect(span.name).toBe('process payment.captured');
    expect(span.spanContext().traceId).toBe(TRACE);
    expect(span.parentSpanContext?.spanId).toBe(PARENT);
    expect(span.attributes).toMatchObject({
      'messaging.consumer.group.name': 'ledger',
      'messaging.message.id': 'm-1',
      'inbox.outcome': 'duplicate',
      'inbox.duplicate': true,
    });
    expect(span.events.map((e) => e.name)).toEqual(['inbox.duplicate_skipped']);
  });
});
