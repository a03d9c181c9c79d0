import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { GateTrace } from '../../lib/observability/gate.tracing';
import { PROBLEM_TYPES } from '../../lib/problem-details';

/**
 * The gate's span per answer (the integration test drives created, replayed, in_progress and
 * mismatch through the sample app; the server-side failures are hard to cause there).
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
beforeEach(() => exporter.reset());

const run = (answer: (t: GateTrace) => void) => {
  const t = GateTrace.start(
    { method: 'POST', route: '/payments', path: '/payments' },
    'leased',
    () => '0123456789abcdef',
  );
  answer(t);
  t.end();
  const [span] = exporter.getFinishedSpans();
  return span;
};

it.each([
  [PROBLEM_TYPES.misconfigured, 500, 'misconfigured'],
  [PROBLEM_TYPES.unavailable, 503, 'unavailable'],
  [PROBLEM_TYPES.storedResponseUnreadable, 500, 'unreadable'],
])('a %s problem (%i) is outcome %s, status ERROR', (type, status, outcome) => {
  const span = run((t) => t.problem(type, status));
  expect(span.name).toBe('idempotency POST /payments');
  expect(span.attributes).toMatchObject({
    'idempotency.outcome': outcome,
    'idempotency.mode': 'leased',
    'idempotency.key_hash': '0123456789abcdef',
    'http.response.status_code': status,
  });
  expect(span.status.code).toBe(2);
});

it('lease lost is its own outcome; the last answer stands (a wait that ends in a replay)', () => {
  expect(
    run((t) => t.problem(PROBLEM_TYPES.leaseLost, 409)).attributes['idempotency.outcome'],
  ).toBe('lease_lost');
  exporter.reset();
  const span = run((t) => {
    t.problem(PROBLEM_TYPES.inProgress, 409);
    t.replayed(201);
  });
  expect(span.attributes).toMatchObject({
    'idempotency.outcome': 'replayed',
    'idempotency.replayed': true,
    'http.response.status_code': 201,
  });
  expect(span.events.map((e) => e.name)).toEqual([
    'idempotency.in_progress',
    'idempotency.replayed',
  ]);
  expect(span.status.code).toBe(0);
});

it('a handler that ran without a stored answer (a 5xx) is not_stored', () => {
  expect(run(() => undefined).attributes['idempotency.outcome']).toBe('not_stored');
});
