/** Texts of the outbox's errors and log lines. */
export const TRANSACTION_REQUIRED =
  'OutboxService.add() needs a transaction: call it inside @Transactional() / TransactionHost.withTransaction() ' +
  '(or an @Idempotent() handler in transactional mode), or pass the EntityManager of your own transaction ' +
  '(dataSource.transaction((manager) => outbox.add(events, manager))). ' +
  'Set outbox.requireTransaction: false to allow writes in their own autocommit statement.';
export const MANAGER_NOT_IN_TRANSACTION =
  'OutboxService.add(): the EntityManager passed is not in a transaction (use the manager given by dataSource.transaction(), ' +
  'or set outbox.requireTransaction: false).';
export const INVALID_EVENT = (index: number, reason: string) =>
  `OutboxService.add(): event #${index} is invalid: ${reason}`;
export const DUPLICATE_ID = (id: string) =>
  `the message id "${id}" appears twice in the same add() call`;
export const PUBLISH_TIMEOUT = (ms: number) =>
  `the publisher did not confirm the message within ${ms} ms (outbox.publishTimeoutMs)`;
export const NO_PUBLISHER =
  'Outbox relay not started: no publisher. Set the outbox.publisher module option or provide the OutboxPublisher token ' +
  '(e.g. new ClientProxyPublisher(client)); or set outbox.relayEnabled: false in processes that only write.';
export const MISSING_PACKAGE = (pkg: string, what: string) =>
  `${what} needs the optional package "${pkg}": npm install ${pkg}`;
export const UNAVAILABLE_NOTE = (error: string) =>
  `not published, the broker was unreachable (no attempt counted): ${error}`;
export const KAFKA_OPTIONS_INVALID = (reason: string) =>
  `KafkaPublisher: ${reason} (new KafkaPublisher({ brokers: ['host:9092'], topic: 'orders' }))`;
export const KAFKA_BATCH_IN_FLIGHT =
  'KafkaPublisher: the previous batch is still waiting for the acknowledgement of the Kafka cluster (slow or unreachable); this batch was not sent and is retried';
export const KAFKA_PARTITIONS_UNACKNOWLEDGED = (partitions: string[]) =>
  `KafkaPublisher: kafkajs resolved the batch without an acknowledgement for ${partitions.join(', ')} (their leader moved during the send); the batch is retried`;
export const UNREADABLE_PAYLOAD = (reason: string) =>
  `the stored payload or headers are not valid JSON: ${reason}`;
export const OUTBOX_WITHOUT_PUBLISHER = (users: string[]) =>
  `IdempotencyModule: OutboxService is used (by ${users.join(', ')}) but the outbox relay of this process has no publisher, so the messages stay pending. ` +
  'Provide one: the outbox.publisher option, or a provider of the OutboxPublisher token (e.g. new ClientProxyPublisher(client)). ' +
  'In a process that only writes while another one relays, set outbox: { relayEnabled: false } to silence this warning.';

export const RMQ_CLIENT_CHANNEL_ERROR = (error: unknown) =>
  `RabbitMQ: the publishing channel could not be set up (${String(error)}); ` +
  `it is set up again when the connection is back, and the relay retries what was not confirmed.`;
