import {
  context,
  createTraceState,
  isSpanContextValid,
  propagation,
  trace,
  TraceFlags,
  type Context,
} from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';

/** Where a guarded request's span hangs. @internal */
export interface RequestParent {
  readonly context: Context;
  /** True when the parent is the caller's (read from the request's headers), not a local span. */
  readonly remote: boolean;
}

/**
 * The parent of the gate's span. An active span (the HTTP server span of the app's
 * instrumentation, or any span the app started) stays the parent. With none, the caller's
 * context is taken from the request's headers: through the registered propagator when the app
 * registered one (its own formats, baggage included), else by reading W3C `traceparent` and
 * `tracestate` directly, since `@opentelemetry/api` alone extracts nothing (its default
 * propagator is a no-op). Without a valid context in either, the span is a root, as before.
 * @internal
 */
export function requestParent(headers: IncomingHttpHeaders | undefined): RequestParent {
  const active = context.active();
  const local = trace.getSpanContext(active);
  if ((local && isSpanContextValid(local)) || !headers) return { context: active, remote: false };
  const extracted =
    propagation.fields().length > 0
      ? propagation.extract(active, headers)
      : extractW3C(active, headers);
  const remote = trace.getSpanContext(extracted);
  return remote && isSpanContextValid(remote)
    ? { context: extracted, remote: true }
    : { context: active, remote: false };
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * W3C Trace Context (Level 1) extraction: `version-traceid-parentid-flags`, lower-case hex;
 * version `ff` is invalid; version `00` has exactly these four fields, a later version may append
 * fields after a `-` (read as version 00); all-zero ids are invalid (checked by the caller's
 * `isSpanContextValid`). `tracestate` is read only with a valid `traceparent`; repeated headers
 * are one comma-separated list; invalid members are dropped. @internal
 */
export function extractW3C(parent: Context, headers: IncomingHttpHeaders): Context {
  const header = headers.traceparent;
  if (typeof header !== 'string') return parent;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return parent;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return parent;
  const state = headers.tracestate;
  const raw = Array.isArray(state) ? state.join(',') : state;
  return trace.setSpanContext(parent, {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
    ...(raw ? { traceState: createTraceState(raw) } : {}),
  });
}
