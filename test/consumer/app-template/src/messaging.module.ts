import { Module } from '@nestjs/common';
import { type ClientProxy, ClientProxyFactory, Transport } from '@nestjs/microservices';
import { ClientProxyPublisher, OutboxPublisher } from 'nestjs-exactly-once';

export const rabbitMqOptions = {
  urls: [process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672'],
  queue: process.env.EVENTS_QUEUE ?? 'events',
  queueOptions: { durable: true },
};

@Module({
  providers: [
    {
      provide: 'EVENTS',
      useFactory: () =>
        ClientProxyFactory.create({ transport: Transport.RMQ, options: rabbitMqOptions }),
    },
    {
      provide: OutboxPublisher,
      useFactory: (client: ClientProxy) => new ClientProxyPublisher(client),
      inject: ['EVENTS'],
    },
  ],
  exports: [OutboxPublisher],
})
export class MessagingModule {}
