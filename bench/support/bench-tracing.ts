import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/** Drops every span: what tracing costs in the process, without the network of an exporter. */
class NoopSpanExporter implements SpanExporter {
  exported = 0;
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.exported += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

/**
 * BENCH_TRACING=on: the system under test runs with the OpenTelemetry tracing SDK (context
 * manager, W3C propagators, every span sampled and batched) and a no-op exporter, so a bench row
 * shows what the library's spans cost. Unset: no SDK, the library's spans are the API's no-ops.
 */
export function installBenchTracing(): boolean {
  if (process.env.BENCH_TRACING !== 'on') return false;
  new NodeTracerProvider({
    spanProcessors: [new BatchSpanProcessor(new NoopSpanExporter())],
  }).register();
  return true;
}
