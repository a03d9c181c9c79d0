import { Injectable, OnModuleDestroy } from '@nestjs/common';

/**
 * Delays of inbox retries held in this process: a RabbitMQ delivery waiting to be requeued, a
 * handler waiting to run again in place. Timers do not keep the process alive; on shutdown
 * (module destroy, before the transports close) every held delivery is released at once and
 * every in-place wait ends, so nothing waits out its delay during a shutdown.
 * @internal
 */
@Injectable()
export class InboxRetryTimers implements OnModuleDestroy {
  private readonly held = new Map<NodeJS.Timeout, () => void>();
  private closed = false;

  /** Runs `release` after `delayMs`, or at once when the application shuts down first. */
  later(delayMs: number, release: () => void): void {
    if (this.closed || delayMs <= 0) return release();
    const timer = setTimeout(() => {
      this.held.delete(timer);
      release();
    }, delayMs);
    timer.unref();
    this.held.set(timer, release);
  }

  /** Resolves true after `delayMs`, or false as soon as the application shuts down. */
  sleep(delayMs: number): Promise<boolean> {
    return new Promise((resolve) => this.later(delayMs, () => resolve(!this.closed)));
  }

  /** Deliveries held right now (waiting for their delay). */
  get size(): number {
    return this.held.size;
  }

  onModuleDestroy(): void {
    this.closed = true;
    const releases = [...this.held];
    this.held.clear();
    for (const [timer, release] of releases) {
      clearTimeout(timer);
      release();
    }
  }
}
