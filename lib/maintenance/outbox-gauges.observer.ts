import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { OutboxStore } from '../outbox/outbox.store';
import { MaintenanceStore } from './maintenance.store';
import type { OutboxBacklogSnapshot } from '../observability/metrics.service';
import { MetricsService } from '../observability/metrics.service';

/** A collection within this many ms of the last one reuses its figures (several readers, one query). */
const CACHE_MS = 1000;

/**
 * Feeds the outbox gauges (`outbox.backlog`, `outbox.publisher.backlog`, `outbox.oldest_pending.age`,
 * `outbox.dead_letters`) from the database when a metric reader collects: two cheap queries over
 * the pending and dead rows, at most once a second. Without an OpenTelemetry SDK nothing ever
 * collects.
 * @internal
 */
@Injectable()
export class OutboxGaugesObserver implements OnModuleInit, OnModuleDestroy {
  private dispose: (() => void) | undefined;
  private cached: { at: number; value: Promise<OutboxBacklogSnapshot> } | undefined;

  constructor(
    private readonly store: MaintenanceStore,
    private readonly outbox: OutboxStore,
    private readonly metrics: MetricsService,
  ) {}

  onModuleInit(): void {
    this.dispose = this.metrics.observeOutbox(() => this.snapshot());
  }

  onModuleDestroy(): void {
    this.dispose?.();
    this.dispose = undefined;
  }

  private snapshot(): Promise<OutboxBacklogSnapshot> {
    const now = Date.now();
    if (this.cached && now - this.cached.at < CACHE_MS) return this.cached.value;
    const value = Promise.all([this.store.outboxHealth(), this.outbox.pendingByRoute()]).then(
      ([r, pendingByPublisher]) => ({
        pending: r.pending,
        oldestPendingAgeMs: r.oldestPendingAgeMs,
        dead: r.dead,
        pendingByPublisher,
      }),
    );
    value.catch(() => {
      if (this.cached?.value === value) this.cached = undefined;
    });
    this.cached = { at: now, value };
    return value;
  }
}
