import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** The parent span id of a finished span (SDK 2: `parentSpanContext`). */
export const parentIdOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;

/**
 * The spans of one trace as an indented tree, children in start order: how the README shows a
 * trace. `attrs` picks the attributes printed after each name.
 */
export function renderTrace(spans: readonly ReadableSpan[], attrs: readonly string[] = []): string {
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  const children = new Map<string | undefined, ReadableSpan[]>();
  for (const s of spans) {
    const p = parentIdOf(s);
    const key = p && ids.has(p) ? p : undefined;
    if (!children.has(key)) children.set(key, []);
    children.get(key)!.push(s);
  }
  const start = (s: ReadableSpan) => s.startTime[0] * 1e9 + s.startTime[1];
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of (children.get(parent) ?? []).sort((a, b) => start(a) - start(b))) {
      const shown = attrs
        .filter((a) => s.attributes[a] !== undefined)
        .map((a) => `${a}=${String(s.attributes[a])}`);
      lines.push(`${'  '.repeat(depth)}${s.name}${shown.length ? `  [${shown.join(' ')}]` : ''}`);
      walk(s.spanContext().spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n');
}
