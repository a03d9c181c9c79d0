import { isDatabaseUnavailable } from '../../persistence/database-unavailable';
import type { OutboxMessage } from '../outbox-message.interface';
import type { OutboxPublisher } from '../outbox-publisher.interface';
import { PublisherUnavailableError } from '../outbox.errors';
import { IN_PROCESS_ABORTED, IN_PROCESS_NOT_BOUND } from '../outbox.messages';

/** Runs the handlers of one message (the app's `@OnOutboxMessage()` methods). @internal */
export type InProcessDispatch = (message: OutboxMessage, signal: AbortSignal) => Promise<void>;

/**
 * The in-process ("local") publisher: the relay hands each committed message to the app's
 * `@OnOutboxMessage(type)` handlers instead of a broker, each handler in its own transaction with
 * its inbox record (one effect per message and handler). The database transport of a modular
 * monolith: the outbox table is the queue, the relay's lease, retries, backoff and dead letters
 * apply as to any publisher. Create it with {@link inProcessPublisher}.
 *
 * - A message whose type has no handler fails (`NoOutboxHandlerError`): retried, then dead after
 *   `outbox.maxAttempts`, never dropped.
 * - On shutdown the handlers' `AbortSignal` is aborted; a handler that stops with an error then
 *   counts no attempt: the message is given back and runs again after the restart.
 * - A handler that failed because the database could not be reached counts no attempt either
 *   (the relay backs this publisher off as for a broker outage).
 * - A handler's run is bounded by `outbox.publishTimeoutMs` like a broker's confirmation; past it
 *   the attempt counts as failed (its transaction may still commit: the inbox then makes the
 *   retry a no-op).
 */
export class InProcessPublisher implements OutboxPublisher {
  /** OpenTelemetry `messaging.system` of the relay's spans. */
  readonly messagingSystem = 'in-process';
  private dispatch: InProcessDispatch | undefined;
  private controller = new AbortController();

  /** Connects the publisher to the app's handlers (done at boot by the library). @internal */
  bind(dispatch: InProcessDispatch): void {
    this.dispatch = dispatch;
  }

  /** Whether the library bound it to an app's handlers. */
  get bound(): boolean {
    return !!this.dispatch;
  }

  /** Aborts the handlers running now and refuses new runs until {@link rearm}. @internal */
  abortInFlight(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new Error(IN_PROCESS_ABORTED));
  }

  /** A new signal after an abort (the relay started again). @internal */
  rearm(): void {
    if (this.controller.signal.aborted) this.controller = new AbortController();
  }

  async publish(message: OutboxMessage): Promise<void> {
    if (!this.dispatch) throw new Error(IN_PROCESS_NOT_BOUND);
    const signal = this.controller.signal;
    if (signal.aborted) throw new PublisherUnavailableError(IN_PROCESS_ABORTED);
    try {
      await this.dispatch(message, signal);
    } catch (e) {
      if (signal.aborted) throw new PublisherUnavailableError(IN_PROCESS_ABORTED, { cause: e });
      throw e;
    }
  }

  /** Only a shutdown (aborted handlers) or an unreachable database is "unavailable". */
  isUnavailable(error: Error): boolean {
    return isDatabaseUnavailable(error);
  }
}

/**
 * The in-process publisher: `outbox: { publisher: inProcessPublisher() }`, or one of several:
 * `outbox: { publishers: { local: inProcessPublisher(), kafka: … }, route }`.
 */
export function inProcessPublisher(): InProcessPublisher {
  return new InProcessPublisher();
}
