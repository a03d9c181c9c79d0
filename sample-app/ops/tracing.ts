import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/** service.name when OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) does not say. */
export const DEFAULT_SERVICE_NAME = 'nestjs-exactly-once-sample';

let provider: NodeTracerProvider | undefined;

/**
 * The sample app's tracing SDK, configured by OpenTelemetry's standard variables and installed
 * only when they ask for it (nothing is exported, no SDK is registered, when
 * OTEL_TRACES_EXPORTER is unset or `none`; the library's spans are then the API's no-ops):
 * - OTEL_TRACES_EXPORTER: `otlp` and/or `console` (comma-separated), `none`;
 * - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf` (default)
 *   or `http/json` (`grpc` is refused: the sample app ships no gRPC exporter);
 * - OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
 *   OTEL_BSP_SCHEDULE_DELAY, … read by the exporter and the batch processor themselves;
 * - OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: the resource.
 * `provider.register()` installs the AsyncLocalStorage context manager and the W3C
 * `traceparent` + `baggage` propagator, which the library uses to store the trace context in
 * outbox messages and to continue it in consumers. Runs before the Nest app is created.
 */
export function installTracing(env: NodeJS.ProcessEnv = process.env): boolean {
  if (provider) return true;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s && s !== 'none');
  if (!exporters.length) return false;
  const spanProcessors: SpanProcessor[] = exporters.map(
    (name) => new BatchSpanProcessor(spanExporter(name, env)),
  );
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
  provider = new NodeTracerProvider({ resource, spanProcessors });
  provider.register();
  return true;
}

/** Exports the spans still buffered and stops the SDK (the app's shutdown hook calls it). */
export async function shutdownTracing(): Promise<void> {
  const p = provider;
  provider = undefined;
  await p?.shutdown();
}

function spanExporter(name: string, env: NodeJS.ProcessEnv): SpanExporter {
  if (name === 'console') return new ConsoleSpanExporter();
  if (name !== 'otlp') {
    throw new Error(`OTEL_TRACES_EXPORTER: "${name}" is not supported (otlp, console, none)`);
  }
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  switch (protocol) {
    case 'http/json': {
      const { OTLPTraceExporter } =
        require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
      return new OTLPTraceExporter();
    }
    case 'http/protobuf': {
      const { OTLPTraceExporter } =
        require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
      return new OTLPTraceExporter();
    }
    default:
      throw new Error(
        `OTEL_EXPORTER_OTLP_PROTOCOL: "${protocol}" is not supported by the sample app (http/protobuf, http/json)`,
      );
  }
}
