/** An event to write to the outbox with `OutboxService.add()`. */
export interface OutboxEvent<TPayload = unknown> {
  /**
   * The event type, e.g. `payment.captured`: the pattern / routing key / subject it is published
   * under. Printable ASCII without spaces, at most 255 characters.
   */
  type: string;
  /** The payload: anything `JSON.stringify` turns into JSON. */
  payload: TPayload;
  /** String headers that travel with the message (names: printable ASCII, not `message-id`, `message-type`, `partition-key`). */
  headers?: Record<string, string>;
  /**
   * Partition key, e.g. the aggregate id (at most 255 characters). With `outbox.ordered` (the
   * default) the messages of one key are published in the order their transactions committed
   * (in the order added within one transaction), one at a time; transports with partitions or
   * sessions (Kafka keys, Service Bus sessions) receive it too.
   */
  partitionKey?: string | null;
  /**
   * Publish no earlier than this many ms after the add (on the database's clock). A delayed
   * message of a partition key holds back the key's later messages until it is published
   * (under `outbox.ordered`). At most 366 days. Not with `availableAt`.
   */
  delay?: number;
  /**
   * Publish no earlier than this time (read on this process's clock: the message is stored as
   * due after `availableAt - now`). A time in the past means at once. Not with `delay`.
   */
  availableAt?: Date;
  /** The message id consumers de-duplicate by. Default: a new UUID. Printable ASCII, at most 128 characters, unique. */
  id?: string;
}

/** A message as a publisher receives it from the relay. */
export interface OutboxMessage<TPayload = unknown> {
  readonly id: string;
  readonly type: string;
  readonly payload: TPayload;
  /** The event's headers plus `message-id`, `message-type` and (when set) `partition-key`. */
  readonly headers: Readonly<Record<string, string>>;
  readonly partitionKey: string | null;
  /** The outbox sequence number (a BIGINT, as a string). */
  readonly seq: string;
  /** Publish attempts made before this one (all failed: 0 on a first attempt). */
  readonly attempts: number;
  /** When the business transaction wrote it (database clock). */
  readonly createdAt: Date;
}
