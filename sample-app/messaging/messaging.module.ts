import {
  DynamicModule,
  Global,
  Inject,
  Injectable,
  Module,
  OnApplicationShutdown,
  Optional,
  Provider,
} from '@nestjs/common';
import { ClientOptions, ClientProxy, ClientProxyFactory, Transport } from '@nestjs/microservices';
import {
  ClientProxyPublisher,
  inProcessPublisher,
  KafkaPublisher,
  OutboxPublisher,
} from '../../lib';
import { BrokerConfig, brokerConfigFromEnv } from './broker.config';
import { fanOutExchange } from './consumer-services';
import { declareRabbitFanOut } from './rabbit-fan-out';
import { BROKER_CLIENT, BROKER_CONFIG } from './messaging.constants';

/** Closes the broker client after the relay has stopped (the relay stops in beforeApplicationShutdown). */
@Injectable()
class BrokerClientCloser implements OnApplicationShutdown {
  constructor(@Optional() @Inject(BROKER_CLIENT) private readonly client?: ClientProxy) {}

  async onApplicationShutdown(): Promise<void> {
    await this.client?.close();
  }
}

/**
 * The sample app's messaging, with the transport chosen once (BROKER_URL, see broker.config.ts):
 * the `OutboxPublisher` the library's relay picks up, and (with `connectMessaging()`) the
 * microservice transport `@EventPattern()` consumers listen on.
 * - embedded: the library's in-process publisher (`inProcessPublisher()`): the relay runs the
 *   `@OnOutboxMessage()` handlers of the ledger and notifications modules, each in its own
 *   transaction with its inbox record; the outbox table is the queue, no broker;
 * - RabbitMQ / NATS: `ClientProxyPublisher` over a `ClientRMQ` / `ClientNats`;
 * - Kafka: `KafkaPublisher` (kafkajs, idempotent, acks from all in-sync replicas) to the topic
 *   BROKER_QUEUE, every event type on it, keyed by the payment id.
 */
@Global()
@Module({})
export class MessagingModule {
  static forRoot(config: BrokerConfig = brokerConfigFromEnv()): DynamicModule {
    const providers: Provider[] = [
      { provide: BROKER_CONFIG, useValue: config },
      BrokerClientCloser,
    ];
    if (config.kind === 'embedded') {
      providers.push({ provide: OutboxPublisher, useFactory: () => inProcessPublisher() });
    } else if (config.kind === 'kafka') {
      providers.push({
        provide: OutboxPublisher,
        useFactory: () =>
          new KafkaPublisher({
            brokers: config.brokers,
            clientId: 'sample-app-relay',
            topic: config.queue,
          }),
      });
    } else {
      providers.push(
        {
          provide: BROKER_CLIENT,
          useFactory: async () => {
            if (config.kind === 'rabbitmq') await declareRabbitFanOut(config);
            return ClientProxyFactory.create(clientOptions(config));
          },
        },
        {
          provide: OutboxPublisher,
          useFactory: (client: ClientProxy) => new ClientProxyPublisher(client),
          inject: [BROKER_CLIENT],
        },
      );
    }
    return {
      module: MessagingModule,
      providers,
      exports: [
        BROKER_CONFIG,
        OutboxPublisher,
        ...(config.kind === 'embedded' || config.kind === 'kafka' ? [] : [BROKER_CLIENT]),
      ],
    };
  }
}

/**
 * Client options of the relay's ClientProxy. RabbitMQ: publishes to the fanout exchange
 * BROKER_EXCHANGE, which copies each event to every consuming service's queue (the ledger's is
 * BROKER_QUEUE); NATS: publishes on the event's subject, which every queue group receives.
 */
function clientOptions(
  config: Exclude<BrokerConfig, { kind: 'embedded' | 'kafka' }>,
): ClientOptions {
  if (config.kind === 'rabbitmq') {
    return {
      transport: Transport.RMQ,
      options: {
        urls: [config.url],
        queue: config.queue,
        queueOptions: { durable: true },
        exchange: fanOutExchange(config),
        exchangeType: 'fanout',
        persistent: true,
      },
    };
  }
  return { transport: Transport.NATS, options: { servers: [config.url] } };
}
