import type { INestApplication } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
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
import { EmbeddedTransport } from './embedded.transport';
import { BROKER_CONFIG } from './messaging.constants';

/**
 * Connects the consumer side of the transport MessagingModule was configured with, one server per
 * consuming service this process runs (CONSUMERS, see consumer-services.ts), so each service's
 * `@EventPattern('payment.captured', <service>)` handlers receive the relay's messages, and starts
 * them:
 * - embedded: one EmbeddedTransport on the app's EventEmitter2 for every service's handlers (in
 *   one process every listener gets each event; CONSUMERS does not apply);
 * - RabbitMQ: the service's durable queue (the ledger's: BROKER_QUEUE), bound to the fanout
 *   exchange the relay publishes to, `noAck: false` (`@IdempotentConsumer()` acks each delivery
 *   after its transaction commits; a crash before the ack means redelivery);
 * - NATS: the event subjects, in the service's queue group (one instance of a service gets each
 *   message; every service gets it).
 */
export async function connectMessaging(app: INestApplication): Promise<void> {
  const config = app.get<BrokerConfig>(BROKER_CONFIG);
  if (config.kind === 'embedded') {
    // In process every listener of a pattern gets each event: one server carries the handlers
    // of every service (and any handler without a transport id), each bound once.
    const server = new EmbeddedTransport(app.get(EventEmitter2));
    server.transportId = undefined;
    app.connectMicroservice<MicroserviceOptions>({ strategy: server });
    await app.startAllMicroservices();
    return;
  }
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
      throw new Error('the embedded transport has one server (see connectMessaging)');
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
