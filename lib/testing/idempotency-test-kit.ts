import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntitySchema } from 'typeorm';
import { IdempotencyAdminService } from '../maintenance/admin.service';
import type {
  IdempotencyKeyView,
  IdempotencyScopeRef,
  InboxEntry,
  InboxListFilter,
} from '../maintenance/admin.service';
import { OutboxRelay } from '../outbox/outbox-relay.service';
import type { OutboxMessage } from '../outbox/outbox-message.interface';
import type { IdempotencyRecord } from '../persistence/entities';
import { CapturingPublisher } from './capturing.publisher';
import { TestClock } from './test-clock';
import { DRAIN_DID_NOT_SETTLE } from './testing.messages';

/** @internal The kit's parts, provided by IdempotencyTestingModule. */
export const TEST_KIT_PARTS = Symbol('nestjs-exactly-once:test-kit-parts');

/** @internal */
export interface TestKitParts {
  dataSource: DataSource;
  clock: TestClock;
  publisher: CapturingPublisher;
  idempotencyEntity: EntitySchema<IdempotencyRecord>;
}

/** Most passes drainOutbox() makes before it gives up (a test that keeps adding messages). */
const MAX_DRAIN_PASSES = 1000;

/**
 * What a test reaches through the testing module: drain the outbox and read what it published,
 * inspect stored keys and inbox rows, move the clock. Get it with `app.get(IdempotencyTestKit)`.
 */
@Injectable()
export class IdempotencyTestKit {
  constructor(
    @Inject(TEST_KIT_PARTS) private readonly parts: TestKitParts,
    private readonly relay: OutboxRelay,
    private readonly admin: IdempotencyAdminService,
  ) {}

  /** The database's clock (the library's): `clock.advance(ms)` lets a TTL or lease pass. */
  get clock(): TestClock {
    return this.parts.clock;
  }

  /** The in-process publisher the relay sends through; `publisher.failNext()` to test retries. */
  get publisher(): CapturingPublisher {
    return this.parts.publisher;
  }

  /** The in-memory SQLite DataSource (the app's entities live there too). */
  get dataSource(): DataSource {
    return this.parts.dataSource;
  }

  /**
   * Runs the relay until no message is due (each pass claims, publishes and marks a batch, as
   * the background relay does) and returns the messages this drain published, in order. A
   * message whose publish failed stays in the outbox with its retry time: advance the clock past
   * the backoff and drain again.
   */
  async drainOutbox(): Promise<OutboxMessage[]> {
    const from = this.publisher.published.length;
    for (let pass = 0; ; pass++) {
      if (pass >= MAX_DRAIN_PASSES) throw new Error(DRAIN_DID_NOT_SETTLE(pass));
      const r = await this.relay.runOnce(this.publisher);
      // A failed publish is not due again before its backoff: the loop ends with nothing due.
      if (r.claimed === 0) break;
    }
    return this.publisher.published.slice(from);
  }

  /** Every message the relay has published since the module started (or `publisher.clear()`). */
  get published(): readonly OutboxMessage[] {
    return this.publisher.published;
  }

  /**
   * The ledger's view of one key (state, status, expiry, lease; never the stored body), or
   * undefined. Scope: `{ method: 'POST', route: '/payments' }` (plus `tenant` / `principal`
   * when the gate scopes by them) or the stored scope string.
   */
  storedKey(scope: IdempotencyScopeRef, key: string): Promise<IdempotencyKeyView | undefined> {
    return this.admin.inspectIdempotencyKey(scope, key);
  }

  /** Every record of the idempotency ledger, oldest first (stored bodies included, as bytes). */
  storedKeys(): Promise<IdempotencyRecord[]> {
    return this.dataSource
      .getRepository(this.parts.idempotencyEntity)
      .find({ order: { id: 'ASC' } });
  }

  /** Inbox records (consumer, message id, status, attempts), newest first. */
  inboxRows(filter: InboxListFilter = {}): Promise<InboxEntry[]> {
    return this.admin.listInbox({ limit: 1000, ...filter });
  }
}
