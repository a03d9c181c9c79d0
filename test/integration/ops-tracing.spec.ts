import type { INestApplication } from '@nestjs/common';
import { context, propagation, trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { randomBytes, randomUUID } from 'node:crypto';
import { OutboxAdminService } from '../../lib';
import { deleteQueue, NATS_URL, RABBIT_URL } from '../fixtures/outbox/rabbit-collector';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { eventually } from '../support/eventually';
import { baseUrl, type Platform, startSampleApp } from '../support/sample-app';
import { parentIdOf, renderTrace } from '../support/span-tree';

/**
 * Tracing across the outbox, with an in-memory exporter: the sample app's POST /payments with a
 * client's traceparent, through the gate, the outbox row, the relay's publish and the broker, to
 * the ledger consumer's inbox, is one trace; a replay and a redelivered duplicate show as such;
 * no key and no payload in any attribute.
 */
const exporter = new InMemorySpanExporter();
/** Spans as they start (the in-memory exporter sees them only when they end). */
const started: Array<{ traceId: string; name: string }> = [];
const onStart: SpanProcessor = {
  onStart: (s) => started.push({ traceId: s.spanContext().traceId, name: s.name }),
  onEnd: () => undefined,
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};
const provider = new NodeTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(exporter), onStart],
});

beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const spansOf = (traceId: string) =>
  exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
const byName = (spans: readonly ReadableSpan[], name: string) =>
  spans.filter((s) => s.name === name);
const only = (spans: readonly ReadableSpan[], name: string): ReadableSpan => {
  const found = byName(spans, name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0];
};
const id = (s: ReadableSpan) => s.spanContext().spanId;

type Transport = 'embedded' | 'rabbitmq' | 'nats';
const brokerDb = databaseKinds().includes('postgres') ? 'postgres' : 'sqlite';
const cases: Array<[string, Transport, Platform]> = [
  ...databaseKinds().map((k): [string, Transport, Platform] => [k, 'embedded', 'express']),
  [databaseKinds()[0], 'embedded', 'fastify'],
  [brokerDb, 'rabbitmq', 'express'],
  [brokerDb, 'nats', 'express'],
];

describe.each(cases)(
  'tracing across the outbox on %s, %s transport, %s',
  (kind, transport, platform) => {
    let db: TestDatabase;
    let app: INestApplication;
    let url: string;
    const queue = `eo-trace-${randomUUID()}`;

    beforeAll(async () => {
      db = await createTestDatabase(kind as TestDatabase['kind']);
      const broker = transport === 'rabbitmq' ? RABBIT_URL : transport === 'nats' ? NATS_URL : '';
      app = await startSampleApp(db.url, platform, {
        BROKER_URL: broker,
        BROKER_QUEUE: queue,
        OUTBOX_POLL_INTERVAL_MS: '100',
      });
      url = await baseUrl(app);
    });

    afterAll(async () => {
      await app?.close();
      if (transport === 'rabbitmq') await deleteQueue(queue);
      await db?.drop();
    });

    const post = (key: string, traceparent: string, customerId: string) =>
      fetch(`${url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key, traceparent },
        body: JSON.stringify({ amount: 42.5, currency: 'EUR', customerId }),
      });

    it('a key reused with another body shows as mismatch, a concurrent retry as in_progress', async () => {
      const key = `trace-key-${randomUUID()}`;
      const slowTrace = hex(16);
      const slow = fetch(`${url}/payments`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          'x-demo-delay-ms': '1500',
          traceparent: `00-${slowTrace}-${hex(8)}-01`,
        },
        body: JSON.stringify({ amount: 7, currency: 'EUR', customerId: 'trace-slow' }),
      });
      // The first request holds the key when the retry comes: its handler has added the outbox
      // event (the `create` span started) and sleeps 1.5 s before its transaction commits.
      await eventually('the first request runs its handler', () =>
        started.some((s) => s.traceId === slowTrace && s.name === 'create payment.captured'),
      );
      const retryTrace = hex(16);
      const retry = await fetch(`${url}/payments`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          traceparent: `00-${retryTrace}-${hex(8)}-01`,
        },
        body: JSON.stringify({ amount: 7, currency: 'EUR', customerId: 'trace-slow' }),
      });
      expect((await slow).status).toBe(201);
      const mismatchTrace = hex(16);
      const other = await post(key, `00-${mismatchTrace}-${hex(8)}-01`, 'trace-other-customer');
      expect(other.status).toBe(422);
      const gateOf = (t: string) =>
        eventually(
          `the gate span of trace ${t}`,
          () => byName(spansOf(t), 'idempotency POST /payments')[0],
        );
      expect((await gateOf(mismatchTrace)).attributes['idempotency.outcome']).toBe('mismatch');
      expect((await gateOf(slowTrace)).attributes['idempotency.outcome']).toBe('created');
      // On the shared Babelfish stand-in for SQL Server the retry was seen to wait for the first
      // request and get its replay (201) instead of a 409; the span must then say `replayed`.
      if (kind !== 'mssql') expect(retry.status).toBe(409);
      const outcome = retry.status === 409 ? 'in_progress' : 'replayed';
      expect((await gateOf(retryTrace)).attributes).toMatchObject({
        'idempotency.outcome': outcome,
        'idempotency.replayed': outcome === 'replayed',
        'http.response.status_code': retry.status,
      });
    });

    it('one trace from the client traceparent to the ledger consumer; a replay shows as replayed; a redelivery as a skipped duplicate; no key or payload in attributes', async () => {
      const traceId = hex(16);
      const clientSpanId = hex(8);
      const key = `trace-key-${randomUUID()}`;
      const customerId = `trace-customer-${randomUUID()}`;
      const r = await post(key, `00-${traceId}-${clientSpanId}-01`, customerId);
      expect(r.status).toBe(201);
      const payment = (await r.json()) as { id: string };
      await eventually('the ledger entry is written', async () => {
        const entries = (await (
          await fetch(`${url}/ledger?paymentId=${payment.id}`)
        ).json()) as unknown[];
        return entries.length === 1;
      });
      // Two services consume the event (the ledger and, with its own inbox, notifications).
      const processedBy = (consumer: string) =>
        eventually(`the ${consumer} consumer span is exported`, () =>
          byName(spansOf(traceId), 'process payment.captured').find(
            (s) =>
              s.attributes['inbox.outcome'] === 'processed' &&
              s.attributes['inbox.consumer'] === consumer,
          ),
        );
      const processed = await processedBy('ledger');
      const notified = await processedBy('notifications');
      // The publish span ends once the broker has confirmed: on the embedded transport (and
      // NATS, after its flush) that may be after the consumer's span.
      await eventually('the publish span is exported', () =>
        byName(spansOf(traceId), 'send payment.captured').length > 0 ? true : undefined,
      );
      const spans = spansOf(traceId);

      // The chain: client → HTTP server → gate → create (OutboxService.add) → send (relay) → process (inbox).
      const server = only(spans, 'POST /payments');
      expect(parentIdOf(server)).toBe(clientSpanId);
      const gate = only(spans, 'idempotency POST /payments');
      expect(parentIdOf(gate)).toBe(id(server));
      expect(gate.attributes).toMatchObject({
        'idempotency.outcome': 'created',
        'idempotency.replayed': false,
        'idempotency.mode': expect.any(String),
        'http.response.status_code': 201,
      });
      expect(gate.attributes['idempotency.key_hash']).toMatch(/^[0-9a-f]{8,64}$/);
      const create = only(spans, 'create payment.captured');
      expect(parentIdOf(create)).toBe(id(gate));
      const send = only(spans, 'send payment.captured');
      expect(parentIdOf(send)).toBe(id(create));
      expect(send.attributes).toMatchObject({
        'messaging.operation.type': 'send',
        'messaging.destination.name': 'payment.captured',
        'messaging.message.id': create.attributes['messaging.message.id'],
        'outbox.attempt': 1,
      });
      if (transport !== 'embedded') expect(send.attributes['messaging.system']).toBe(transport);
      expect(parentIdOf(processed)).toBe(id(send));
      expect(processed.attributes).toMatchObject({
        'messaging.operation.type': 'process',
        'messaging.message.id': create.attributes['messaging.message.id'],
        'messaging.consumer.group.name': 'ledger',
        'inbox.duplicate': false,
        'inbox.attempts': expect.any(Number),
      });
      if (transport !== 'embedded') {
        expect(processed.attributes['messaging.system']).toBe(transport);
      }
      // The fan-out: the notifications service's delivery is a second child of the same send.
      expect(parentIdOf(notified)).toBe(id(send));

      // A replay of the same request, in another trace: the gate's span says so, nothing is added.
      const replayTrace = hex(16);
      const again = await post(key, `00-${replayTrace}-${hex(8)}-01`, customerId);
      expect(again.status).toBe(201);
      const replayGate = await eventually(
        'the replay span is exported',
        () => byName(spansOf(replayTrace), 'idempotency POST /payments')[0],
      );
      expect(replayGate.attributes).toMatchObject({
        'idempotency.outcome': 'replayed',
        'idempotency.replayed': true,
        'idempotency.key_hash': gate.attributes['idempotency.key_hash'],
      });
      expect(byName(spansOf(replayTrace), 'create payment.captured')).toEqual([]);

      // The message is published again (an operator's requeue of a sent message): the consumer
      // sees a duplicate, skips it, and its span, in the original trace, says so.
      const messageId = String(create.attributes['messaging.message.id']);
      const admin = app.get(OutboxAdminService);
      // Requeue acts on a sent message: the relay marks it sent once the broker has confirmed,
      // which on the embedded transport may be after the consumer has committed (seen on
      // Babelfish, 2026-11-27: requeued 0 while it was still claimed).
      await eventually(
        'the relay has marked the message sent',
        async () => (await admin.get(messageId))?.status === 'sent',
      );
      expect(await admin.requeue(messageId)).toBe(1);
      const duplicate = await eventually('the duplicate delivery is traced', () =>
        byName(spansOf(traceId), 'process payment.captured').find(
          (s) =>
            s.attributes['inbox.outcome'] === 'duplicate' &&
            s.attributes['inbox.consumer'] === 'ledger',
        ),
      );
      expect(duplicate.attributes['inbox.duplicate']).toBe(true);
      expect(duplicate.events.map((e) => e.name)).toContain('inbox.duplicate_skipped');
      // (NATS: the publish's flush may end after the consumer has run.)
      await eventually('the second publish is traced in the same trace', () =>
        byName(spansOf(traceId), 'send payment.captured').length === 2 ? true : undefined,
      );
      const entries = (await (
        await fetch(`${url}/ledger?paymentId=${payment.id}`)
      ).json()) as unknown[];
      expect(entries).toHaveLength(1);

      // No key and no payload in any attribute of either trace.
      for (const s of [...spansOf(traceId), ...spansOf(replayTrace)]) {
        const values = JSON.stringify(Object.values(s.attributes));
        expect(values).not.toContain(key);
        expect(values).not.toContain(customerId);
        expect(values).not.toContain('42.5');
        expect(values).not.toContain('EUR');
      }
      if (process.env.PRINT_TRACE) {
        console.log(
          `trace ${traceId} (${kind}, ${transport})\n` +
            renderTrace(spansOf(traceId), [
              'idempotency.outcome',
              'messaging.system',
              'outbox.attempt',
              'inbox.outcome',
            ]),
        );
      }
    });
  },
);
