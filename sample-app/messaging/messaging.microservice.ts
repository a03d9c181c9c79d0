import type { INestApplication } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { type MicroserviceOptions, Transport } from '@nestjs/microservices';
import type { BrokerConfig } from './broker.config';
import { EmbeddedTransport } from './embedded.transport';
import { KafkaTopicServer } from './kafka.transport';
import { BROKER_CONFIG } from './messaging.constants';

/**
 * Connects the consumer side of the transport MessagingModule was configured with, so
 * `@EventPattern('payment.captured')` handlers receive the relay's messages, and starts it:
 * - embedded: EmbeddedTransport on the app's EventEmitter2;
 * - RabbitMQ: the durable queue BROKER_QUEUE, `noAck: false` (`@IdempotentConsumer()` acks each
 *   delivery after its transaction commits; a crash before the ack means redelivery);
 * - NATS: the event subjects, in queue group BROKER_QUEUE (one instance gets each message);
 * - Kafka: the topic BROKER_QUEUE in consumer group BROKER_GROUP (one instance per partition;
 *   another service reads every message with a group of its own), see kafka.transport.ts.
 */
export async function connectMessaging(app: INestApplication): Promise<void> {
  const config = app.get<BrokerConfig>(BROKER_CONFIG);
  app.connectMicroservice<MicroserviceOptions>(microserviceOptions(app, config));
  await app.startAllMicroservices();
}

function microserviceOptions(app: INestApplication, config: BrokerConfig): MicroserviceOptions {
  switch (config.kind) {
    case 'embedded':
      return { strategy: new EmbeddedTransport(app.get(EventEmitter2)) };
    case 'rabbitmq':
      return {
        transport: Transport.RMQ,
        options: {
          urls: [config.url],
          queue: config.queue,
          queueOptions: { durable: true },
          noAck: false,
          prefetchCount: 50,
        },
      };
    case 'nats':
      return { transport: Transport.NATS, options: { servers: [config.url], queue: config.queue } };
    case 'kafka':
      return {
        strategy: new KafkaTopicServer(config.queue, {
          // Reconnects within 5 s of the cluster's return (kafkajs' default backs off to 30 s).
          client: {
            clientId: 'sample-app',
            brokers: config.brokers,
            retry: { maxRetryTime: 5_000 },
          },
          // A consumer that died is replaced after 10 s (kafkajs' default: 30 s).
          consumer: { groupId: config.group, sessionTimeout: 10_000, heartbeatInterval: 1_000 },
          postfixId: '',
          // The server's reply producer: the Java client's partitioner (silences kafkajs' v2 notice).
          producer: {
            createPartitioner: (require('kafkajs') as typeof import('kafkajs')).Partitioners
              .DefaultPartitioner,
          },
          subscribe: { fromBeginning: true },
          // Partitions in parallel, each in order. Offsets: kafkajs commits a record's offset
          // once its handler returned, after the inbox transaction committed (per fetched batch);
          // KAFKA_AUTO_COMMIT=false: @IdempotentConsumer() commits each record's offset itself
          // (fewer redeliveries after a crash, one round trip per record: 4x slower here).
          run: {
            partitionsConsumedConcurrently: 4,
            autoCommit: process.env.KAFKA_AUTO_COMMIT !== 'false',
          },
        }),
      };
  }
}
