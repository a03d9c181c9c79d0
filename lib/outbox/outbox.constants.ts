/**
 * Headers the relay puts on every published message, next to the message's own headers
 * (transport-native headers where the transport has them: AMQP headers, NATS headers, Kafka
 * headers, MQTT 5 user properties). Consumers de-duplicate by `message-id` (the header the
 * inbox's default extractor reads, `MESSAGE_ID_HEADER`).
 */
export const OUTBOX_HEADERS = {
  messageId: 'message-id',
  type: 'message-type',
  partitionKey: 'partition-key',
} as const;

/** Limits checked by `OutboxService.add()` (they match the columns of the outbox table). */
export const OUTBOX_LIMITS = {
  idLength: 128,
  typeLength: 255,
  partitionKeyLength: 255,
  headerNameLength: 255,
  /** Stored error text of a failed attempt is cut to this many characters. */
  errorLength: 2000,
  /** Longest `delay` (or `availableAt` ahead) of a message: 366 days. */
  maxDelayMs: 366 * 24 * 3600 * 1000,
} as const;
