import { NestFactory } from '@nestjs/core';
import { type MicroserviceOptions, Transport } from '@nestjs/microservices';
import { AppModule } from './app.module';
import { rabbitMqOptions } from './messaging.module';

async function bootstrap() {
  // rawBody: non-JSON bodies are fingerprinted by their exact bytes.
  const app = await NestFactory.create(AppModule, { rawBody: true });
  // SIGTERM/SIGINT stop the outbox relay cleanly (its claimed batch is released, not left to lapse).
  app.enableShutdownHooks();
  // The consumers (@EventPattern + @IdempotentConsumer) on the same queue; they acknowledge.
  app.connectMicroservice<MicroserviceOptions>({
    transport: Transport.RMQ,
    options: { ...rabbitMqOptions, noAck: false },
  });
  await app.startAllMicroservices();
  await app.listen(process.env.PORT ?? 3000);
}
void bootstrap();
