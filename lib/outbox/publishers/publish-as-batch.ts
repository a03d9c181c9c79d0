import type { OutboxMessage } from '../outbox-message.interface';
import type { OutboxPublisher } from '../outbox-publisher.interface';

/**
 * `publish()` of a publisher that publishes in batches: its `publishBatch()` of the one message,
 * rejected with that message's error.
 */
export async function publishAsBatch(
  publisher: Required<Pick<OutboxPublisher, 'publishBatch'>>,
  message: OutboxMessage,
): Promise<void> {
  const [outcome] = await publisher.publishBatch([message]);
  if (outcome) throw outcome;
}
