import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { deleteQueue, NATS_URL, RABBIT_URL } from '../fixtures/outbox/rabbit-collector';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { eventually } from '../support/eventually';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';

/** A span as OTLP/JSON carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number };
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

/**
 * A tiny OTLP/HTTP receiver (JSON encoding), on 127.0.0.1 only: collects every span the sample
 * app exports to POST /v1/traces, with the service name of its resource.
 */
class OtlpJsonReceiver {
  readonly spans: Array<OtlpSpan & { service: string }> = [];
  readonly contentTypes = new Set<string>();
  requests = 0;
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        this.requests++;
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        this.contentTypes.add(String(req.headers['content-type']));
        const data = JSON.parse(body) as {
          resourceSpans: Array<{
            resource?: { attributes?: OtlpSpan['attributes'] };
            scopeSpans: Array<{ spans: OtlpSpan[] }>;
          }>;
        };
        for (const rs of data.resourceSpans) {
          const service = String(
            rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue,
          );
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) this.spans.push({ ...s, service });
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  of(traceId: string) {
    return this.spans.filter((s) => s.traceId === traceId);
  }
}

const attr = (s: OtlpSpan, key: string): unknown => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

type Transport = 'embedded' | 'rabbitmq' | 'nats';
const kind = databaseKinds().includes('postgres') ? 'postgres' : 'sqlite';

describe.each<Transport>(['embedded', 'rabbitmq', 'nats'])(
  `the sample app process exports one trace over OTLP/HTTP JSON (%s transport, ${kind})`,
  (transport) => {
    let db: TestDatabase;
    let receiver: OtlpJsonReceiver;
    let app: AppProcess;
    const queue = `eo-otlp-${randomUUID()}`;

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      receiver = new OtlpJsonReceiver();
      const endpoint = await receiver.start();
      const env: Record<string, string> = {
        DB_URL: db.url,
        BROKER_QUEUE: queue,
        OUTBOX_POLL_INTERVAL_MS: '200',
        OUTBOX_BACKOFF_BASE_MS: '100',
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_SERVICE_NAME: 'payments-sample',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      };
      if (transport === 'rabbitmq') env.BROKER_URL = RABBIT_URL;
      if (transport === 'nats') env.BROKER_URL = NATS_URL;
      // The ledger's first run of each message fails where the transport delivers again
      // (RabbitMQ requeues, the embedded transport fails the publish and the relay retries).
      if (transport !== 'nats') env.LEDGER_DEMO_FAIL_ATTEMPTS = '1';
      app = await spawnSampleApp(env);
    });

    afterAll(async () => {
      await app?.kill();
      await receiver?.stop();
      if (transport === 'rabbitmq') await deleteQueue(queue);
      await db?.drop();
    });

    it('POST /payments with a traceparent: spans of that trace id from the gate, the relay publish and the ledger consumer', async () => {
      const traceId = randomBytes(16).toString('hex');
      const clientSpanId = randomBytes(8).toString('hex');
      const r = await fetch(`${app.url}/payments`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
          traceparent: `00-${traceId}-${clientSpanId}-01`,
        },
        body: JSON.stringify({ amount: 12.5, currency: 'EUR', customerId: 'otlp-1' }),
      });
      expect(r.status).toBe(201);
      const processed = await eventually(
        'the ledger consumer span arrives at the receiver',
        () =>
          receiver
            .of(traceId)
            .find(
              (s) =>
                s.name === 'process payment.captured' && attr(s, 'inbox.outcome') === 'processed',
            ),
        30_000,
      );
      // The relay's `send` span ends when the broker has confirmed the publish (NATS: after its
      // flush). On RabbitMQ the consumer's spans, the failed run's and the processed one's, ended
      // 1-4 ms before it in runs on this machine, so the parent may come in a later export.
      await eventually(
        "the relay's send span, parent of the consumer span, arrives at the receiver",
        () =>
          receiver
            .of(traceId)
            .find((s) => s.name === 'send payment.captured' && s.spanId === processed.parentSpanId),
        30_000,
      );
      const spans = receiver.of(traceId);
      expect(receiver.contentTypes).toEqual(new Set(['application/json']));
      expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['payments-sample']));
      const server = spans.find((s) => s.name === 'POST /payments')!;
      expect(server.parentSpanId).toBe(clientSpanId);
      const gate = spans.find((s) => s.name === 'idempotency POST /payments')!;
      expect(gate.parentSpanId).toBe(server.spanId);
      expect(attr(gate, 'idempotency.outcome')).toBe('created');
      const create = spans.find((s) => s.name === 'create payment.captured')!;
      expect(create.parentSpanId).toBe(gate.spanId);
      const sends = spans.filter((s) => s.name === 'send payment.captured');
      expect(sends.every((s) => s.parentSpanId === create.spanId)).toBe(true);
      expect(sends.map((s) => s.spanId)).toContain(processed.parentSpanId);
      expect(attr(processed, 'messaging.message.id')).toBe(attr(create, 'messaging.message.id'));
      if (transport !== 'nats') {
        // The first run failed: its span is in the same trace, failed, marked for a retry.
        const retry = await eventually('the failed first run is exported', () =>
          receiver
            .of(traceId)
            .find(
              (s) => s.name === 'process payment.captured' && attr(s, 'inbox.outcome') === 'retry',
            ),
        );
        expect(retry.status?.code).toBe(2);
      }
      if (process.env.PRINT_TRACE) {
        const byParent = new Map<string | undefined, OtlpSpan[]>();
        for (const s of receiver.of(traceId)) {
          const p = s.parentSpanId || undefined;
          byParent.set(p, [...(byParent.get(p) ?? []), s]);
        }
        const lines: string[] = [];
        const walk = (p: string | undefined, d: number) => {
          for (const s of byParent.get(p) ?? []) {
            const shown = [
              'idempotency.outcome',
              'idempotency.mode',
              'idempotency.key_hash',
              'messaging.system',
              'messaging.message.id',
              'outbox.attempt',
              'inbox.outcome',
              'inbox.attempts',
            ]
              .filter((k) => attr(s, k) !== undefined)
              .map((k) => `${k}=${String(attr(s, k))}`);
            if (s.status?.code === 2) shown.push('status=ERROR');
            lines.push(`${'  '.repeat(d)}${s.name} (${s.spanId}) ${shown.join(' ')}`);
            walk(s.spanId, d + 1);
          }
        };
        walk(clientSpanId, 0);
        console.log(`OTLP trace ${traceId} (${transport})\n${lines.join('\n')}`);
      }
    });
  },
);

describe(`the sample app process without OTEL_TRACES_EXPORTER (${kind})`, () => {
  it('exports nothing, even with an OTLP endpoint configured', async () => {
    const db = await createTestDatabase(kind);
    const receiver = new OtlpJsonReceiver();
    const endpoint = await receiver.start();
    const app = await spawnSampleApp({
      DB_URL: db.url,
      OTEL_TRACES_EXPORTER: '',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    try {
      const r = await fetch(`${app.url}/payments`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
          traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
        },
        body: JSON.stringify({ amount: 3.5, currency: 'EUR', customerId: 'otlp-off' }),
      });
      expect(r.status).toBe(201);
      const payment = (await r.json()) as { id: string };
      await eventually('the ledger entry is written', async () => {
        const entries = (await (
          await fetch(`${app.url}/ledger?paymentId=${payment.id}`)
        ).json()) as unknown[];
        return entries.length === 1;
      });
    } finally {
      // A normal shutdown: an SDK, had one been installed, would flush its spans now.
      await app.kill('SIGTERM');
      await receiver.stop();
      await db.drop();
    }
    expect(app.child.exitCode ?? app.child.signalCode).not.toBeNull();
    expect(receiver.requests).toBe(0);
  });
});
