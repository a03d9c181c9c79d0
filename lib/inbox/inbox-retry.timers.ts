import { Injectable, OnModuleDestroy } from '@nestjs/common';

interface Held {
  release: () => void;
  abandon: () => void;
}

/**
 * Delays of inbox retries held in this process: a RabbitMQ delivery waiting to be requeued, a
 * handler waiting to run again in place. Timers do not keep the process alive. On shutdown
 * (module destroy, before Nest closes the transports) every timer stops and its `abandon` runs:
 * a held RabbitMQ delivery is left unacknowledged, and RabbitMQ returns it to the queue when the
 * channel closes a moment later (requeueing it here instead could hand it straight back to this
 * closing process); an in-place wait ends (the handler does not run again).
 * @internal
 */
@Injectable()
export class InboxRetryTimers implements OnModuleDestroy {
  private readonly held = new Map<NodeJS.Timeout, Held>();
  private closed = false;

  /**
   * Runs `release` after `delayMs`; when the application shuts down first (or has), runs
   * `abandon` instead.
   */
  later(delayMs: number, release: () => void, abandon: () => void = () => undefined): void {
    if (this.closed) return abandon();
    if (delayMs <= 0) return release();
    const timer = setTimeout(() => {
      this.held.delete(timer);
      release();
    }, delayMs);
    timer.unref();
    this.held.set(timer, { release, abandon });
  }

  /** Resolves true after `delayMs`, or false as soon as the application shuts down. */
  sleep(delayMs: number): Promise<boolean> {
    return new Promise((resolve) =>
      this.later(
        delayMs,
        () => resolve(true),
        () => resolve(false),
      ),
    );
  }

  /** Delays running right now. */
  get size(): number {
    return this.held.size;
  }

  onModuleDestroy(): void {
    this.closed = true;
    const held = [...this.held];
    this.held.clear();
    for (const [timer, h] of held) {
      clearTimeout(timer);
      h.abandon();
    }
  }
}
