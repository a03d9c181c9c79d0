/** DI token of the sample app's BrokerConfig. */
export const BROKER_CONFIG = Symbol('BrokerConfig');
/** DI token of the ClientProxy the relay publishes through (RabbitMQ or NATS; absent on the embedded transport). */
export const BROKER_CLIENT = Symbol('BrokerClient');
