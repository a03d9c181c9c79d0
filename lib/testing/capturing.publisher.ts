import type { OutboxMessage } from '../outbox/outbox-message.interface';
import type { OutboxPublisher } from '../outbox/outbox-publisher.interface';

/**
 * An in-process publisher that keeps what the relay publishes, in order. `failNext()` makes the
 * next publishes throw, to test retries and dead messages.
 */
export class CapturingPublisher implements OutboxPublisher {
  readonly messagingSystem = 'in-process';
  /** Every message published so far, oldest first. */
  readonly published: OutboxMessage[] = [];
  private failures: Error[] = [];

  async publish(message: OutboxMessage): Promise<void> {
    const failure = this.failures.shift();
    if (failure) throw failure;
    this.published.push(message);
  }

  /** The next `times` publishes fail with `error` (the relay records the attempt and retries later). */
  failNext(
    error: Error = new Error('publish failed (CapturingPublisher.failNext)'),
    times = 1,
  ): void {
    for (let i = 0; i < times; i++) this.failures.push(error);
  }

  /** Forgets what was published and any pending failures. */
  clear(): void {
    this.published.length = 0;
    this.failures = [];
  }
}
