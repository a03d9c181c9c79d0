import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import {
  IdempotencyHealthIndicator,
  inProcessPublisher,
  OnOutboxMessage,
  OutboxRouteError,
  PublisherUnavailableError,
} from '../../lib';
import type { OutboxEvent, OutboxHandlerContext } from '../../lib';
import {
  type OutboxFixture,
  RecordingPublisher,
  startOutboxFixture,
} from '../fixtures/outbox/outbox-fixture';
import { eventually } from '../support/eventually';
import {
  createTestDatabase,
  databaseKinds,
  placeholder,
  type TestDatabase,
} from '../support/databases';

const NO_POLLING = 3_600_000;
const EFFECTS = 'routes52_effects';

/** What the in-process handlers of a test do, set per test. */
const behaviour: {
  ledger: (payload: any, ctx: OutboxHandlerContext) => Promise<void> | void;
  audit: (payload: any, ctx: OutboxHandlerContext) => Promise<void> | void;
} = { ledger: () => undefined, audit: () => undefined };

@Injectable()
class EffectsHandlers {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Writes one effect row in the handler's transaction (with its inbox record). */
  async effect(kind: string, handler: string, messageId: string): Promise<void> {
    const p = (i: number) => placeholder(kind as any, i);
    await this.txHost.tx.query(
      `INSERT INTO ${EFFECTS} (handler, message_id) VALUES (${p(0)}, ${p(1)})`,
      [handler, messageId],
    );
  }

  @OnOutboxMessage('payment.created', { name: 'ledger' })
  async ledger(payload: any, ctx: OutboxHandlerContext): Promise<void> {
    await this.effect(payload.kind, 'ledger', ctx.message.id);
    await behaviour.ledger(payload, ctx);
  }

  @OnOutboxMessage(['payment.created', 'payment.audited'], { name: 'audit' })
  async audit(payload: any, ctx: OutboxHandlerContext): Promise<void> {
    await this.effect(payload.kind, 'audit', ctx.message.id);
    await behaviour.audit(payload, ctx);
  }
}

describe.each(databaseKinds())('outbox routes and in-process handlers on %s', (kind) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });

  afterAll(async () => {
    await db?.drop();
  });

  describe('named publishers and routes', () => {
    let f: OutboxFixture;
    const a = new RecordingPublisher((_, attempt) => {
      if (attempt === 1) throw new Error('refused once');
    });
    const b = new RecordingPublisher();
    let routeTo = 'a';

    beforeAll(async () => {
      f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: {
          publishers: { a, b },
          route: (e: OutboxEvent) => (e.type === 'bad.route' ? 'nowhere' : routeTo),
          relayEnabled: false,
          backoffBaseMs: 0,
          backoffMaxMs: 0,
          pollIntervalMs: NO_POLLING,
        },
      });
    });

    afterAll(async () => {
      await f?.close();
    });

    it('stores the route at enqueue: a retry after the route function changed still goes to the stored publisher', async () => {
      const id = randomUUID();
      routeTo = 'a';
      await f.txHost.withTransaction(() => f.outbox.add({ id, type: 't.route', payload: {} }));
      expect((await f.admin.get(id))?.route).toBe('a');
      routeTo = 'b';
      const first = await f.relay.runOnce();
      expect(first).toMatchObject({ failed: 1 });
      await eventually('retried and published', async () => {
        await f.relay.runOnce();
        return (await f.admin.get(id))?.status === 'sent';
      });
      expect(a.publishedIds()).toContain(id);
      expect(a.attemptsOf(id)).toBe(2);
      expect(b.attemptsOf(id)).toBe(0);
      expect((await f.admin.get(id))?.route).toBe('a');
    });

    it('refuses an event routed to an unknown publisher: nothing of the call is written', async () => {
      const good = randomUUID();
      const bad = randomUUID();
      const add = f.txHost.withTransaction(() =>
        f.outbox.add([
          { id: good, type: 't.ok', payload: {} },
          { id: bad, type: 'bad.route', payload: {} },
        ]),
      );
      await expect(add).rejects.toBeInstanceOf(OutboxRouteError);
      await expect(add).rejects.toThrow(/"nowhere", which is not a configured publisher \(a, b\)/);
      expect(await f.admin.get(good)).toBeUndefined();
      expect(await f.admin.get(bad)).toBeUndefined();
    });

    it('leaves a message routed to a publisher the relay no longer has pending, and health reports it', async () => {
      const id = randomUUID();
      routeTo = 'b';
      await f.txHost.withTransaction(() => f.outbox.add({ id, type: 't.orphan', payload: {} }));
      const onlyA = await startOutboxFixture({
        dbUrl: db.url,
        outbox: { publishers: { a }, pollIntervalMs: 50, backoffBaseMs: 0, backoffMaxMs: 0 },
      });
      try {
        // The relay of `onlyA` runs; messages of `a` flow, the one of `b` waits.
        const flows = randomUUID();
        await onlyA.txHost.withTransaction(() =>
          onlyA.outbox.add({ id: flows, type: 't.flows', payload: {} }),
        );
        await eventually('a message of a flows', async () => {
          return (await onlyA.admin.get(flows))?.status === 'sent';
        });
        const row = await onlyA.admin.get(id);
        expect(row).toMatchObject({ status: 'pending', attempts: 0, route: 'b' });
        const health = await onlyA.app.get(IdempotencyHealthIndicator).isHealthy('outbox');
        expect(health.outbox.unroutedPending).toEqual({ b: 1 });
        expect(Object.keys(health.outbox.publishers ?? {})).toEqual(['a']);
      } finally {
        await onlyA.close();
      }
      // Back with a relay that has `b`: published, nothing lost.
      await f.relay.runOnce();
      expect(b.publishedIds()).toContain(id);
    });
  });

  describe('one publisher down, the other flows', () => {
    it("keeps publishing b's messages while a's broker is unreachable, then publishes a's", async () => {
      let down = true;
      const a = new RecordingPublisher(() => {
        if (down) throw new PublisherUnavailableError('connect ECONNREFUSED (test)');
      });
      const b = new RecordingPublisher();
      const f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: {
          publishers: { a, b },
          route: (e) => (e.type.startsWith('to.a') ? 'a' : 'b'),
          pollIntervalMs: 20,
          backoffBaseMs: 50,
          backoffMaxMs: 200,
          batchSize: 5,
        },
      });
      try {
        const aIds: string[] = Array.from({ length: 12 }, () => randomUUID());
        await f.txHost.withTransaction(() =>
          f.outbox.add(aIds.map((id) => ({ id, type: 'to.a', payload: {} }))),
        );
        // a's messages come first in sequence order; b's are behind them.
        const bIds: string[] = Array.from({ length: 12 }, () => randomUUID());
        await f.txHost.withTransaction(() =>
          f.outbox.add(bIds.map((id) => ({ id, type: 'to.b', payload: {} }))),
        );
        await eventually('every message of b is published while a is down', () =>
          bIds.every((id) => b.publishedIds().includes(id)),
        );
        expect(a.publishedIds().filter((id) => aIds.includes(id))).toEqual([]);
        const status = f.relay.status;
        expect(status.publishers.a.outage).toMatchObject({ reason: 'broker' });
        expect(status.publishers.b.outage).toBeNull();
        const health = await f.app.get(IdempotencyHealthIndicator).isHealthy('outbox');
        expect(health.outbox.publishers?.a.backingOff?.lastError).toContain('ECONNREFUSED');
        expect(health.outbox.publishers?.a.pending).toBe(12);
        expect(health.outbox.publishers?.b.backingOff).toBeUndefined();
        for (const id of aIds) expect((await f.admin.get(id))?.attempts).toBe(0);
        down = false;
        await eventually('a recovers and publishes its messages', () =>
          aIds.every((id) => a.publishedIds().includes(id)),
        );
        await eventually('a is no longer backing off', () => !f.relay.status.publishers.a.outage);
      } finally {
        await f.close();
      }
    });
  });

  describe('boot checks', () => {
    it('fails at boot with several publishers and no route function', async () => {
      await expect(
        startOutboxFixture({
          dbUrl: db.url,
          outbox: { publishers: { a: new RecordingPublisher(), b: new RecordingPublisher() } },
        }),
      ).rejects.toThrow(/set outbox.route/);
    });

    it('fails at boot when a named publisher is not a publisher', async () => {
      await expect(
        startOutboxFixture({
          dbUrl: db.url,
          outbox: { publishers: { a: {} as any }, relayEnabled: false },
        }),
      ).rejects.toThrow(/outbox.publishers.a is not an OutboxPublisher/);
    });

    it('fails at boot when @OnOutboxMessage is used without an in-process publisher, naming the fix', async () => {
      await expect(
        startOutboxFixture({
          dbUrl: db.url,
          outbox: { publisher: new RecordingPublisher(), relayEnabled: false },
          providers: [EffectsHandlers],
        }),
      ).rejects.toThrow(/no in-process publisher is configured.*inProcessPublisher\(\)/s);
    });
  });

  describe('in-process handlers (@OnOutboxMessage)', () => {
    let f: OutboxFixture;
    const local = inProcessPublisher();

    const effects = async (id: string) => {
      const rows: Array<{ handler: string }> = await f.dataSource.query(
        `SELECT handler FROM ${EFFECTS} WHERE message_id = ${placeholder(kind, 0)}`,
        [id],
      );
      return rows.map((r) => r.handler).sort();
    };
    const add = (id: string, type = 'payment.created') =>
      f.txHost.withTransaction(() => f.outbox.add({ id, type, payload: { kind } }));
    const drain = async (id: string, status: string) =>
      eventually(`message ${status}`, async () => {
        await f.relay.runOnce();
        return (await f.admin.get(id))?.status === status;
      });

    beforeAll(async () => {
      f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: {
          publisher: local,
          relayEnabled: false,
          backoffBaseMs: 0,
          backoffMaxMs: 0,
          maxAttempts: 3,
          pollIntervalMs: NO_POLLING,
        },
        providers: [EffectsHandlers],
      });
      await f.dataSource.query(
        `CREATE TABLE ${EFFECTS} (handler VARCHAR(100) NOT NULL, message_id VARCHAR(128) NOT NULL)`,
      );
    });

    afterEach(() => {
      behaviour.ledger = () => undefined;
      behaviour.audit = () => undefined;
    });

    afterAll(async () => {
      await f?.close();
    });

    it('runs every handler of the type once, each effect committed with its inbox record', async () => {
      const id = randomUUID();
      await add(id);
      await drain(id, 'sent');
      expect(await effects(id)).toEqual(['audit', 'ledger']);
      // Delivered again (as after a relay crash between the handlers' commit and the mark):
      // the inbox records make it a no-op.
      expect(await f.admin.requeue(id)).toBe(1);
      await drain(id, 'sent');
      expect(await effects(id)).toEqual(['audit', 'ledger']);
    });

    it('retries a message whose handler failed; the handler that succeeded does not run again', async () => {
      const id = randomUUID();
      let calls = 0;
      behaviour.audit = () => {
        if (++calls === 1) throw new Error('audit failed once');
      };
      await add(id);
      expect(await f.relay.runOnce()).toMatchObject({ failed: 1, dead: 0 });
      // The failed handler's effect rolled back; the ledger's committed.
      expect(await effects(id)).toEqual(['ledger']);
      await drain(id, 'sent');
      expect(await effects(id)).toEqual(['audit', 'ledger']);
      expect((await f.admin.get(id))?.attempts).toBe(2);
    });

    it('makes a message dead after maxAttempts when its handler keeps failing, its effects rolled back', async () => {
      const id = randomUUID();
      behaviour.ledger = () => {
        throw new Error('ledger is broken');
      };
      await add(id);
      await drain(id, 'dead');
      const row = await f.admin.get(id);
      expect(row).toMatchObject({ attempts: 3 });
      expect(row?.lastError).toContain('ledger is broken');
      expect(await effects(id)).toEqual(['audit']);
    });

    it('does not drop a message whose type has no handler: retried, then dead with a clear error', async () => {
      const id = randomUUID();
      await add(id, 'nobody.listens');
      await drain(id, 'dead');
      expect((await f.admin.get(id))?.lastError).toContain(
        "no @OnOutboxMessage('nobody.listens') handler",
      );
    });
  });

  describe('shutdown', () => {
    it('aborts the AbortSignal of a running handler on app close; the message runs again after the restart', async () => {
      const id = randomUUID();
      let started!: () => void;
      const running = new Promise<void>((r) => (started = r));
      let sawAbort = false;
      behaviour.ledger = (_p, { signal }) =>
        new Promise<void>((_, reject) => {
          started();
          signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(signal.reason);
          });
        });
      const options = {
        publisher: inProcessPublisher(),
        pollIntervalMs: 20,
        backoffBaseMs: 0,
        backoffMaxMs: 0,
      };
      const f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: options,
        providers: [EffectsHandlers],
      });
      await f.txHost.withTransaction(() =>
        f.outbox.add({ id, type: 'payment.created', payload: { kind } }),
      );
      await running;
      await f.close();
      expect(sawAbort).toBe(true);
      behaviour.ledger = () => undefined;
      const again = await startOutboxFixture({
        dbUrl: db.url,
        outbox: { ...options, publisher: inProcessPublisher() },
        providers: [EffectsHandlers],
      });
      try {
        await eventually('processed after the restart', async () => {
          return (await again.admin.get(id))?.status === 'sent';
        });
        // The aborted run was given back without counting an attempt: only the one that succeeded.
        expect((await again.admin.get(id))?.attempts).toBe(1);
        const rows: Array<{ handler: string }> = await again.dataSource.query(
          `SELECT handler FROM ${EFFECTS} WHERE message_id = ${placeholder(kind, 0)}`,
          [id],
        );
        expect(rows.map((r) => r.handler).sort()).toEqual(['audit', 'ledger']);
      } finally {
        await again.close();
      }
    });
  });
});
