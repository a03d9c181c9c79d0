import type { INestApplication } from '@nestjs/common';
import {
  type CustomStrategy,
  type MicroserviceOptions,
  ServerKafka,
  ServerNats,
  ServerRMQ,
  Transport,
} from '@nestjs/microservices';
import type { BrokerConfig } from './broker.config';
import { type ConsumerService, enabledConsumerServices, fanOutExchange } from './consumer-services';
import { KafkaTopicServer } from './kafka.transport';
import { BROKER_CONFIG } from './messaging.constants';

/**
 * Connects the consumer side of the transport MessagingModule was configured with, one server per
 * consuming service this process runs (CONSUMERS, see consumer-services.ts), so each service's
 * `@EventPattern('payment.captured', <service>)` handlers receive the relay's messages, and starts
 * them:
 * - embedded: nothing to connect: the relay runs the `@OnOutboxMessage()` handlers itself
 *   (in-process publisher, see messaging.module.ts; CONSUMERS does not apply);
 * - RabbitMQ: the service's durable queue (the ledger's: BROKER_QUEUE), bound to the fanout
 *   exchange the relay publishes to, `noAck: false` (`@IdempotentConsumer()` acks each delivery
 *   after its transaction commits; a crash before the ack means redelivery);
 * - NATS: the event subjects, in the service's queue group (one instance of a service gets each
 *   message; every service gets it).
 * - Kafka: the topic BROKER_QUEUE, each service in its own consumer group (the ledger's
 *   BROKER_GROUP, the notifications service's `<BROKER_GROUP>.notifications`): every group reads
 *   every record, the instances of one service share its partitions (see kafka.transport.ts).
 */
export async function connectMessaging(app: INestApplication): Promise<void> {
  const config = app.get<BrokerConfig>(BROKER_CONFIG);
  if (config.kind === 'embedded') return;
  for (const service of enabledConsumerServices(config)) {
    const server = serverOf(microserviceOptions(config, service));
    // Only the handlers of this service (@EventPattern(pattern, service.transportId)) bind to it.
    server.setTransportId(service.transportId);
    app.connectMicroservice<MicroserviceOptions>({ strategy: server });
  }
  await app.startAllMicroservices();
}

function microserviceOptions(config: BrokerConfig, service: ConsumerService): MicroserviceOptions {
  switch (config.kind) {
    case 'embedded':
      throw new Error('the embedded default has no consumer server (see connectMessaging)');
    case 'rabbitmq':
      return {
        transport: Transport.RMQ,
        options: {
          urls: [config.url],
          queue: service.queue,
          queueOptions: { durable: true },
          exchange: fanOutExchange(config),
          exchangeType: 'fanout',
          noAck: false,
          prefetchCount: 50,
        },
      };
    case 'nats':
      return {
        transport: Transport.NATS,
        options: { servers: [config.url], queue: service.queue },
      };
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
          consumer: {
            groupId: consumerGroup(config.group, service),
            sessionTimeout: 10_000,
            heartbeatInterval: 1_000,
          },
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

/** The server of a transport's options (a custom strategy is its own server). */
function serverOf(options: MicroserviceOptions): CustomStrategy['strategy'] & {
  setTransportId(id: symbol): void;
} {
  if ('strategy' in options) return options.strategy as any;
  switch (options.transport) {
    case Transport.RMQ:
      return new ServerRMQ(options.options as any);
    case Transport.NATS:
      return new ServerNats(options.options as any);
    case Transport.KAFKA:
      return new ServerKafka(options.options as any);
    default:
      throw new Error(`the sample app has no consumer server for transport ${options.transport}`);
  }
}

/** A service's Kafka consumer group: the ledger's is BROKER_GROUP, another's `<BROKER_GROUP>.<name>`. */
function consumerGroup(group: string, service: ConsumerService): string {
  return service.name === 'ledger' ? group : `${group}.${service.name}`;
}
