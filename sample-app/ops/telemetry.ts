import { metrics } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/**
 * The sample app's OpenTelemetry SDK: a MeterProvider with a pull-based Prometheus reader (no
 * server of its own; `GET /metrics` serializes on demand). The library itself only depends on
 * @opentelemetry/api; an app that installs no SDK gets no-op instruments.
 */
interface Telemetry {
  provider: MeterProvider;
  exporter: PrometheusExporter;
  serializer: PrometheusSerializer;
}

let telemetry: Telemetry | undefined;

/**
 * Registers the global MeterProvider once per process. Must run before the Nest app is created:
 * the library makes its instruments when its MetricsService is constructed.
 */
export function installTelemetry(): Telemetry {
  if (telemetry) return telemetry;
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  metrics.setGlobalMeterProvider(provider);
  telemetry = { provider, exporter, serializer: new PrometheusSerializer() };
  return telemetry;
}

/** The current metrics in the Prometheus text exposition format (version 0.0.4). */
export async function prometheusText(): Promise<string> {
  const t = installTelemetry();
  const { resourceMetrics } = await t.exporter.collect();
  return t.serializer.serialize(resourceMetrics);
}
