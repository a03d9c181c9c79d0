// `nestjs-exactly-once/kafka`: the outbox publisher for Kafka (needs the `kafkajs` package).
export {
  KafkaPublisher,
  KafkaBatchInFlightError,
  KafkaPartitionsUnacknowledgedError,
  isKafkaUnavailableError,
} from '../outbox/publishers/kafka.publisher';
export type {
  KafkaPublisherOptions,
  KafkaClientLike,
  KafkaProducerLike,
  KafkaRecord,
} from '../outbox/publishers/kafka.publisher';
