import {
  context,
  propagation,
  trace,
  type Context,
  type TextMapPropagator,
} from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { extractW3C, requestParent } from '../../lib/observability/trace-context';

/**
 * Where the gate's span hangs: an active span stays the parent; with none, the caller's
 * traceparent/tracestate, through the app's propagator when one is registered, else read per
 * W3C Trace Context by the library itself (the API alone has a no-op propagator).
 */
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const root = context.active();
const parentOf = (c: Context) => trace.getSpanContext(c);

describe('extractW3C (Trace Context Level 1)', () => {
  it('reads a valid traceparent and tracestate', () => {
    const sc = parentOf(
      extractW3C(root, {
        traceparent: `00-${TRACE}-${SPAN}-01`,
        tracestate: ['vendor=a,other=b', 'third=c'],
      }),
    );
    expect(sc).toMatchObject({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    expect(sc?.traceState?.serialize()).toBe('vendor=a,other=b,third=c');
  });

  it('keeps an unsampled flag and reads a later version by its first four fields', () => {
    expect(parentOf(extractW3C(root, { traceparent: `00-${TRACE}-${SPAN}-00` }))?.traceFlags).toBe(
      0,
    );
    expect(
      parentOf(extractW3C(root, { traceparent: `01-${TRACE}-${SPAN}-01-future` }))?.spanId,
    ).toBe(SPAN);
  });

  it.each([
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with a fifth field', `00-${TRACE}-${SPAN}-01-x`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(2)}-${SPAN}-01`],
    ['two headers joined by Node', `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`],
    ['garbage', 'not a traceparent'],
  ])('ignores %s', (_what, traceparent) => {
    expect(parentOf(extractW3C(root, { traceparent, tracestate: 'a=b' }))).toBeUndefined();
  });
});

describe('requestParent', () => {
  const provider = new NodeTracerProvider();
  // An SDK without a propagator: the API's global propagator stays the no-op one.
  beforeAll(() => provider.register({ propagator: null }));
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('with no propagator registered, reads W3C itself', () => {
    expect(propagation.fields()).toEqual([]);
    const p = requestParent({ traceparent: `00-${TRACE}-${SPAN}-01` });
    expect(p.remote).toBe(true);
    expect(parentOf(p.context)?.spanId).toBe(SPAN);
  });

  it('an all-zero trace id or no header is no parent: a root', () => {
    expect(requestParent({ traceparent: `00-${'0'.repeat(32)}-${SPAN}-01` }).remote).toBe(false);
    const none = requestParent({});
    expect([none.remote, parentOf(none.context)]).toEqual([false, undefined]);
  });

  it('an active span (the HTTP server span) stays the parent', () => {
    const server = provider.getTracer('t').startSpan('POST /payments');
    const p = context.with(trace.setSpan(context.active(), server), () =>
      requestParent({ traceparent: `00-${TRACE}-${SPAN}-01` }),
    );
    expect(p.remote).toBe(false);
    expect(parentOf(p.context)?.spanId).toBe(server.spanContext().spanId);
    server.end();
  });

  it("a registered propagator is used (the app's format)", () => {
    const custom: TextMapPropagator = {
      fields: () => ['x-trace'],
      inject: () => undefined,
      extract: (ctx, carrier: any) =>
        trace.setSpanContext(ctx, {
          traceId: String(carrier['x-trace']),
          spanId: SPAN,
          traceFlags: 1,
          isRemote: true,
        }),
    };
    propagation.setGlobalPropagator(custom);
    try {
      const p = requestParent({ 'x-trace': TRACE, traceparent: `00-${'1'.repeat(32)}-${SPAN}-01` });
      expect(parentOf(p.context)?.traceId).toBe(TRACE);
    } finally {
      propagation.disable();
    }
  });
});
