import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ProblemDetailsFilter } from '../../lib';
import { installBenchTracing } from '../support/bench-tracing';
import { BenchAppModule } from './bench-app.module';

/**
 * The server process of the http-overhead benchmark (never the load generator's process).
 * Env: DB_URL, PORT, HOST, BENCH_HTTP_PLATFORM (express | fastify), BENCH_TRACING (on: tracing SDK). Set up like the sample app:
 * raw body kept for the fingerprint, global ValidationPipe and problem+json filter.
 */
async function main() {
  // BENCH_TRACING=on: the tracing SDK with a no-op exporter (the "tracing on" rows).
  installBenchTracing();
  const dbUrl = process.env.DB_URL;
  if (!dbUrl) throw new Error('DB_URL is required');
  const module = BenchAppModule.register(dbUrl);
  const logger = ['error', 'warn'] as const;
  const app =
    process.env.BENCH_HTTP_PLATFORM === 'fastify'
      ? await NestFactory.create(module, new FastifyAdapter({ bodyLimit: 1024 * 1024 }), {
          rawBody: true,
          logger: [...logger],
        })
      : await NestFactory.create(module, { rawBody: true, logger: [...logger], bodyParser: true });
  app.useGlobalPipes(new ValidationPipe({ whitelist: true, transform: true }));
  app.useGlobalFilters(new ProblemDetailsFilter());
  await app.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
  // A normal exit on SIGTERM (not a re-raised signal) so that `node --cpu-prof` writes its profile.
  const stop = () => {
    app.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
