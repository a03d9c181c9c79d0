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

export const DEAD_FILTER_REQUIRED =
  'A filtered requeue or purge of dead letters needs at least one criterion (type, partitionKey, failedAfter, failedBefore, errorContains), or all: true for every dead message.';
export const ROUTE_NAME_INVALID = (name: string) =>
  `outbox.publishers: the name "${name}" is not a valid publisher name (letters, digits, ".", "_", "-"; 1..64 characters)`;
export const PUBLISHER_INVALID = (where: string) =>
  `${where} is not an OutboxPublisher (an object with a publish(message) method; e.g. new ClientProxyPublisher(client), inProcessPublisher())`;
export const DEFAULT_PUBLISHER_TWICE =
  'outbox.publisher is the publisher named "default": remove it, or the "default" entry of outbox.publishers';
export const ROUTE_FUNCTION_NOT_A_FUNCTION =
  'outbox.route must be a function (event) => publisher name';
export const ROUTE_WITHOUT_PUBLISHERS =
  'outbox.route is set but no publisher is named: set outbox.publishers ({ name: publisher, … }) in every process that adds messages';
export const ROUTE_FUNCTION_MISSING = (names: string[]) =>
  `outbox.publishers names several publishers (${names.join(', ')}): set outbox.route, (event) => one of these names`;
export const UNKNOWN_ROUTE = (index: number, route: unknown, names: string[]) =>
  `OutboxService.add(): event #${index} is routed to ${JSON.stringify(route)}, which is not a configured publisher (${names.join(', ') || 'none'}); nothing was written`;
export const ROUTE_THREW = (index: number, reason: string) =>
  `OutboxService.add(): outbox.route threw for event #${index}: ${reason}; nothing was written`;
export const ROUTE_NOT_CONFIGURED = (routes: string[]) =>
  `pending messages are routed to publishers this process does not have (${routes.join(', ')}): they wait (not published, not lost) until a relay with these publishers runs, or they are requeued`;
export const NO_OUTBOX_HANDLER = (type: string) =>
  `no @OnOutboxMessage('${type}') handler in this application: the message is retried (a deploy may add the handler) and becomes dead after outbox.maxAttempts, never dropped`;
export const HANDLERS_WITHOUT_IN_PROCESS_PUBLISHER = (handlers: string[]) =>
  `@OnOutboxMessage() is used (${handlers.join(', ')}) but no in-process publisher is configured, so these handlers would never run. ` +
  'Add one: outbox: { publisher: inProcessPublisher() }, or outbox: { publishers: { local: inProcessPublisher(), … }, route }.';
export const IN_PROCESS_NOT_BOUND =
  'inProcessPublisher(): this publisher is not bound to an application; give it to IdempotencyModule (outbox.publisher or outbox.publishers)';
export const IN_PROCESS_ABORTED =
  'the application is shutting down: the in-process handler was aborted and the message is given back (no attempt counted)';
export const HANDLER_NAME_TWICE = (name: string) =>
  `@OnOutboxMessage(): two handlers are named "${name}" (the inbox de-duplicates by handler name): give one a name ({ name: '…' })`;
export const HANDLER_REQUEST_SCOPED = (where: string) =>
  `@OnOutboxMessage() on ${where}: the provider is request-scoped (or transient); in-process handlers need a singleton provider`;
