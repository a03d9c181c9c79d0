import 'reflect-metadata';
import {
  ConsoleLogger,
  Logger,
  type LoggerService,
  type LogLevel,
  ValidationPipe,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ProblemDetailsFilter } from '../lib';
import { AppModule } from './app.module';
import { connectMessaging } from './messaging/messaging.microservice';
import { brokerConfigFromEnv, describeBroker } from './messaging/broker.config';
import { setupDocs } from './ops/docs';
import { HttpTracingInterceptor } from './ops/http-tracing.interceptor';
import { installTelemetry } from './ops/telemetry';
import { installTracing } from './ops/tracing';

/** Builds the sample app on Express (default) or Fastify (HTTP_PLATFORM=fastify). */
export async function createSampleApp(
  options: { dbUrl?: string; platform?: 'express' | 'fastify'; logger?: LogLevel[] | false } = {},
) {
  const platform =
    options.platform ?? (process.env.HTTP_PLATFORM === 'fastify' ? 'fastify' : 'express');
  const logger = options.logger ?? appLogger();
  // The OpenTelemetry SDK goes first: the library makes its instruments when the app is created.
  installTelemetry();
  // Traces only when OTEL_TRACES_EXPORTER says so (see ops/tracing.ts).
  installTracing();
  const module = AppModule.register({ dbUrl: options.dbUrl, platform });
  const app =
    platform === 'fastify'
      ? await NestFactory.create(module, await fastifyAdapter(), {
          rawBody: true,
          logger,
        })
      : await NestFactory.create(module, { rawBody: true, logger, bodyParser: true });
  app.useGlobalPipes(new ValidationPipe({ whitelist: true, transform: true }));
  app.useGlobalFilters(new ProblemDetailsFilter());
  // The HTTP server span, a child of the client's traceparent (a no-op without a tracing SDK).
  app.useGlobalInterceptors(new HttpTracingInterceptor());
  app.enableShutdownHooks();
  setupDocs(app);
  // Consumers (@EventPattern) on the transport BROKER_URL chose: embedded, RabbitMQ or NATS.
  await connectMessaging(app);
  return app;
}

/**
 * Fastify's adapter, loaded only when HTTP_PLATFORM=fastify asks for it: an Express app does not
 * pay for loading Fastify at every start (about a tenth of the sample app's start-up CPU).
 */
async function fastifyAdapter() {
  const { FastifyAdapter } = await import('@nestjs/platform-fastify');
  return new FastifyAdapter({ bodyLimit: 1024 * 1024 });
}

/**
 * LOG_LEVEL's levels, printed as text, or as one JSON object a line with LOG_FORMAT=json (the
 * library's events then keep their fields: `{"message":{"event":"idempotency.replay",…}}`).
 */
function appLogger(): LogLevel[] | LoggerService {
  const levels = logLevels();
  if (process.env.LOG_FORMAT !== 'json') return levels;
  // Logger.isLevelEnabled() reads the levels given as an array: set them before the JSON logger.
  Logger.overrideLogger(levels);
  return new ConsoleLogger({ json: true, logLevels: levels });
}

function logLevels(): LogLevel[] {
  const level = process.env.LOG_LEVEL ?? 'log';
  const order: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];
  const i = order.indexOf(level as LogLevel);
  return order.slice(0, i < 0 ? 4 : i + 1);
}

/** Longest shutdown after SIGTERM / SIGINT before the process exits anyway: SHUTDOWN_TIMEOUT_MS, default 30 s. */
const SHUTDOWN_TIMEOUT_MS = Number(process.env.SHUTDOWN_TIMEOUT_MS || 30_000);

/**
 * A last bound on shutdown, above the library's own (the relay waits at most
 * outbox.shutdownTimeoutMs, a RabbitMQ close at most 5 s): whatever a hook still waits for after
 * SHUTDOWN_TIMEOUT_MS, the process exits with code 1 and says so. Nothing is lost by it: outbox
 * rows not confirmed stay pending, deliveries not acknowledged are redelivered.
 */
function boundShutdown(): void {
  const arm = (signal: NodeJS.Signals) => {
    const timer = setTimeout(() => {
      new Logger('SampleApp').error(
        `shutdown (${signal}) did not complete within ${SHUTDOWN_TIMEOUT_MS} ms (SHUTDOWN_TIMEOUT_MS): exiting`,
      );
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS);
    timer.unref();
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => arm(signal));
}

async function main() {
  boundShutdown();
  const app = await createSampleApp();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, process.env.HOST ?? '127.0.0.1');
  new Logger('SampleApp').log(
    `listening on http://127.0.0.1:${port} (DB_URL=${process.env.DB_URL ?? 'sqlite default'})`,
  );
  new Logger('SampleApp').log(`events: ${describeBroker(brokerConfigFromEnv())}`);
}

if (require.main === module) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
