import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import {
  PARAMTYPES_METADATA,
  PROPERTY_DEPS_METADATA,
  SELF_DECLARED_DEPS_METADATA,
} from '@nestjs/common/constants';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';
import { OutboxPublisher } from './outbox-publisher.interface';
import { OUTBOX_WITHOUT_PUBLISHER } from './outbox.messages';
import { OutboxService } from './outbox.service';

/**
 * Warns at boot when the app writes to the outbox (a provider or controller injects
 * OutboxService) while this process's relay is enabled and has no publisher: the rows would stay
 * pending. A warning rather than an error: a process that only writes, while another process
 * relays, works; it should say so with `outbox: { relayEnabled: false }`, which silences this.
 * @internal
 */
@Injectable()
export class OutboxPublisherCheck implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly moduleRef: ModuleRef,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {}

  onApplicationBootstrap(): void {
    const logger = new LibraryLogger(this.options.logger, 'OutboxRelay');
    if (!this.options.outbox.relayEnabled || !logger.enabled) return;
    if (this.options.outbox.publisher || this.hasPublisherProvider()) return;
    const users = this.outboxUsers();
    if (users.length === 0) return;
    logger.warn(OUTBOX_WITHOUT_PUBLISHER(users));
  }

  private hasPublisherProvider(): boolean {
    try {
      return !!this.moduleRef.get(OutboxPublisher, { strict: false });
    } catch {
      return false;
    }
  }

  /** Names of the app's classes that inject OutboxService (constructor or property). */
  private outboxUsers(): string[] {
    const names = new Set<string>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const type = wrapper.metatype as any;
      if (typeof type !== 'function' || !type.prototype) continue;
      const params: unknown[] = Reflect.getMetadata(PARAMTYPES_METADATA, type) ?? [];
      const declared: Array<{ param: unknown }> =
        Reflect.getMetadata(SELF_DECLARED_DEPS_METADATA, type) ?? [];
      const props: Array<{ type: unknown }> =
        Reflect.getMetadata(PROPERTY_DEPS_METADATA, type) ?? [];
      if (
        params.includes(OutboxService) ||
        declared.some((d) => d.param === OutboxService) ||
        props.some((p) => p.type === OutboxService)
      ) {
        names.add(type.name);
      }
    }
    return [...names];
  }
}
