import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { Subscription } from 'rxjs';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';

/**
 * A provider that follows the app's microservice servers of one transport (`isServer`), as Nest
 * creates them from `connectMicroservice()` / `createMicroservice()`: its RPC target registry is
 * a ReplaySubject, so the servers created before the provider are replayed. Each one is added to
 * `servers`, then handed to `onServer()`, until the module is destroyed.
 * @internal
 */
@Injectable()
export abstract class RpcServerFollower<S> implements OnModuleDestroy {
  protected readonly logger = new LibraryLogger(this.options.logger, 'Inbox');
  /** The servers of the transport, in the order Nest created them. */
  protected readonly servers: S[] = [];
  private readonly subscription: Subscription;

  constructor(
    modules: ModulesContainer,
    @Inject(IDEMPOTENCY_OPTIONS) protected readonly options: ResolvedIdempotencyOptions,
  ) {
    this.subscription = modules.getRpcTargetRegistry().subscribe((target) => {
      if (!this.isServer(target)) return;
      this.servers.push(target);
      this.onServer(target);
    });
  }

  onModuleDestroy(): void {
    this.subscription.unsubscribe();
  }

  /** Whether an RPC target is a server of the followed transport. */
  protected abstract isServer(target: unknown): target is S;

  /** Called once per server followed, right after it is added to `servers`. */
  protected onServer(_server: S): void {}
}
