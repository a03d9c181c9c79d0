import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { Subscription } from 'rxjs';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { isRmqServer, RMQ_CLOSE_TIMED_OUT, watchRmqServer } from '../internal/rmq-connection-loss';
import { LibraryLogger } from '../observability/library-logger';
import { RMQ_CONSUME_FAILED, RMQ_SERVER_CHANNEL_ERROR } from './inbox.messages';

/**
 * Keeps the app's RabbitMQ consumers (Nest's ServerRMQ, from `connectMicroservice()` /
 * `createMicroservice()`) from ending the process when their connection is lost while the channel
 * is being set up: the failure is logged and the server sets its channel and consumer up again on
 * the next connect (see internal/rmq-connection-loss.ts). Servers come from Nest's RPC target
 * registry, which adds each one when it is created, before it starts.
 * @internal
 */
@Injectable()
export class RmqServerWatcher implements OnModuleDestroy {
  protected readonly logger = new LibraryLogger(this.options.logger, 'Inbox');
  private readonly subscription: Subscription;

  constructor(
    modules: ModulesContainer,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {
    // A ReplaySubject: servers created before this provider are replayed.
    this.subscription = modules.getRpcTargetRegistry().subscribe((target) => {
      if (!isRmqServer(target)) return;
      watchRmqServer(
        target,
        (e) => this.logger.warn(RMQ_SERVER_CHANNEL_ERROR(e)),
        (queue, e) => this.logger.warn(RMQ_CONSUME_FAILED(queue, e)),
        (ms) => this.logger.warn(RMQ_CLOSE_TIMED_OUT('ServerRMQ', ms)),
      );
    });
  }

  onModuleDestroy(): void {
    this.subscription.unsubscribe();
  }
}
