import type { INestApplication } from '@nestjs/common';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { randomBytes, randomUUID } from 'node:crypto';
import { startAppOnDatabase, stopAppOnDatabase } from '../support/app-on-database';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { baseUrl, type Platform } from '../support/sample-app';
import { startUserApp } from '../fixtures/ops/user-app.fixture';

/**
 * The caller's trace continues through the gate with no tracing code in the app: a user's app
 * (no HTTP tracing interceptor, no HTTP instrumentation) with an OpenTelemetry SDK in-process.
 * The gate's span takes the request's traceparent/tracestate (the SDK's W3C propagator, or the
 * library's own W3C reading when the app registered no propagator); an active HTTP server span
 * (as instrumentation-http makes) stays the parent.
 */
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const kind = databaseKinds()[0];
const platforms: Platform[] = ['express', 'fastify'];

describe.each(platforms)('the gate continues the caller trace on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startUserApp({ dbUrl, platform }),
    ));
  }, 60_000);
  afterAll(() => stopAppOnDatabase({ app, db }));

  const post = (headers: Record<string, string> = {}) =>
    fetch(`${url}/user-app/guarded`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID(), ...headers },
      body: '{"a":1}',
    });
  const gateSpanOf = (traceId: string) =>
    exporter
      .getFinishedSpans()
      .filter((s) => s.spanContext().traceId === traceId)
      .find((s) => s.name === 'idempotency POST /user-app/guarded');

  it.each([
    ['the SDK propagator', true],
    ['no propagator registered (W3C read by the library)', false],
  ])('takes traceparent and tracestate through %s', async (_how, registered) => {
    if (!registered) propagation.disable();
    try {
      const traceId = hex(16);
      const parent = hex(8);
      const res = await post({
        traceparent: `00-${traceId}-${parent}-01`,
        tracestate: 'vendor=abc',
      });
      expect(res.status).toBe(201);
      // The handler runs inside the caller's trace.
      expect((await res.json()).traceId).toBe(traceId);
      const span = gateSpanOf(traceId);
      expect(span?.parentSpanContext?.spanId).toBe(parent);
      expect(span?.parentSpanContext?.traceState?.get('vendor')).toBe('abc');
      // The process's entry span for the request: SERVER, as the caller's CLIENT span expects.
      expect(span?.kind).toBe(SpanKind.SERVER);
      expect(span?.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.route': '/user-app/guarded',
        'url.path': '/user-app/guarded',
        'url.scheme': 'http',
        'idempotency.outcome': 'created',
      });
    } finally {
      if (!registered) provider.register();
    }
  });

  it('without a traceparent the gate span is a root', async () => {
    const res = await post();
    const traceId = (await res.json()).traceId;
    const span = gateSpanOf(traceId);
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.kind).toBe(SpanKind.INTERNAL);
  });
});

describe('an active HTTP server span stays the parent (express)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  const serverSpans: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    // What instrumentation-http does: a SERVER span from the caller's context, active for the
    // request's handling.
    app = await startUserApp({
      dbUrl: db.url,
      platform: 'express',
      middleware: (req: any, res: any, next) => {
        const caller = propagation.extract(context.active(), req.headers);
        const span = provider
          .getTracer('http')
          .startSpan(`${req.method}`, { kind: SpanKind.SERVER }, caller);
        serverSpans.push(span.spanContext().spanId);
        res.on('finish', () => span.end());
        context.with(trace.setSpan(caller, span), next);
      },
    });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('the gate span is its INTERNAL child', async () => {
    const traceId = hex(16);
    const res = await fetch(`${await baseUrl(app)}/user-app/guarded`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
        traceparent: `00-${traceId}-${hex(8)}-01`,
      },
      body: '{}',
    });
    expect(res.status).toBe(201);
    const gate = exporter
      .getFinishedSpans()
      .find((s) => s.spanContext().traceId === traceId && s.name.startsWith('idempotency POST'));
    expect(gate?.parentSpanContext?.spanId).toBe(serverSpans.at(-1));
    expect(gate?.kind).toBe(SpanKind.INTERNAL);
    expect(gate?.attributes['url.path']).toBeUndefined();
  });
});
