import { Injectable } from '@nestjs/common';

/**
 * In-process "new outbox rows committed" signal between `OutboxService` (which fires it after
 * the commit of a transaction that added rows) and the relay of this process (which claims at
 * once instead of waiting for its next poll). Other processes find the rows by polling.
 * @internal
 */
@Injectable()
export class OutboxWakeSignal {
  private readonly listeners = new Set<() => void>();

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch {
        // a listener's failure must not reach the committing caller
      }
    }
  }
}
