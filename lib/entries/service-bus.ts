// `nestjs-exactly-once/service-bus`: the outbox publisher for Azure Service Bus.
export { ServiceBusPublisher } from '../outbox/publishers/service-bus.publisher';
export type {
  ServiceBusPublisherOptions,
  ServiceBusSenderLike,
  ServiceBusMessageLike,
  ServiceBusMessageBatchLike,
} from '../outbox/publishers/service-bus.publisher';
