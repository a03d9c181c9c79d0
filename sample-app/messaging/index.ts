export { brokerConfigFromEnv, describeBroker, DEFAULT_BROKER_QUEUE } from './broker.config';
export type { BrokerConfig } from './broker.config';
export { incomingMessage } from './incoming-message';
export type { IncomingMessage } from './incoming-message';
export { BROKER_CLIENT, BROKER_CONFIG } from './messaging.constants';
export { connectMessaging } from './messaging.microservice';
export { MessagingModule } from './messaging.module';
export { outboxOptionsFromEnv } from './outbox.config';
export {
  consumerServices,
  enabledConsumerServices,
  fanOutExchange,
  LEDGER_SERVICE,
  NOTIFICATIONS_SERVICE,
} from './consumer-services';
export type { ConsumerService, ConsumerServiceName } from './consumer-services';
