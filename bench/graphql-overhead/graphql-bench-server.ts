import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ProblemDetailsFilter } from '../../lib';
import { GraphqlBenchModule } from './graphql-bench.module';

/** The server process of the graphql-overhead benchmark (Express, Apollo). Env: DB_URL, PORT, HOST. */
async function main() {
  const dbUrl = process.env.DB_URL;
  if (!dbUrl) throw new Error('DB_URL is required');
  const app = await NestFactory.create(GraphqlBenchModule.register(dbUrl), {
    rawBody: true,
    logger: ['error', 'warn'],
    bodyParser: true,
  });
  app.useGlobalPipes(new ValidationPipe({ whitelist: true, transform: true }));
  app.useGlobalFilters(new ProblemDetailsFilter());
  await app.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
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
