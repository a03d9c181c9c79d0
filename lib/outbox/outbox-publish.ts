import { rejectAfter } from '../internal/timeouts';
import type { OutboxMessage } from './outbox-message.interface';
import type { OutboxPublisher } from './outbox-publisher.interface';
import { OutboxPublishTimeoutError } from './outbox.errors';
import { PUBLISH_TIMEOUT } from './outbox.messages';

/**
 * Hands `messages` to the publisher (one batch when it takes batches, else one call each), each
 * call bounded by `timeoutMs`; one outcome per message: undefined when confirmed, else the error.
 * @internal
 */
export async function publishWithin(
  publisher: OutboxPublisher,
  messages: OutboxMessage[],
  timeoutMs: number,
): Promise<Array<Error | undefined>> {
  const timeoutError = () => new OutboxPublishTimeoutError(PUBLISH_TIMEOUT(timeoutMs), timeoutMs);
  if (publisher.publishBatch) {
    try {
      const results = await rejectAfter(publisher.publishBatch(messages), timeoutMs, timeoutError);
      return messages.map((_, k) => toError(results[k], true));
    } catch (e) {
      return messages.map(() => toError(e));
    }
  }
  return Promise.all(
    messages.map(async (m) => {
      try {
        await rejectAfter(publisher.publish(m), timeoutMs, timeoutError);
        return undefined;
      } catch (e) {
        return toError(e);
      }
    }),
  );
}

function toError(e: unknown, allowUndefined = false): Error | undefined {
  if (e === undefined || e === null) {
    return allowUndefined ? undefined : new Error('publish failed');
  }
  return e instanceof Error ? e : new Error(String(e));
}
