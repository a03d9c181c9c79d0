import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { InboxBenchModule } from './inbox-bench.module';

/** The server process of bench/inbox (never the suite's). Env: DB_URL, PORT, HOST. */
async function main() {
  const dbUrl = process.env.DB_URL;
  if (!dbUrl) throw new Error('DB_URL is required');
  const app = await NestFactory.create(InboxBenchModule.register(dbUrl), {
    logger: ['error', 'warn'],
  });
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
