// `nestjs-exactly-once/client-proxy`: the outbox publisher through a Nest microservices
// ClientProxy (RabbitMQ, NATS, Redis, MQTT, TCP; needs `@nestjs/microservices`).
export { ClientProxyPublisher } from '../outbox/publishers/client-proxy.publisher';
export type {
  ClientProxyPublisherOptions,
  ClientProxyTransport,
  OutboxEnvelope,
} from '../outbox/publishers/client-proxy.publisher';
