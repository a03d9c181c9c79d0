import { Propagation } from '@nestjs-cls/transactional';
import { randomUUID } from 'node:crypto';
import {
  FunctionPublisher,
  InvalidOutboxEventError,
  OutboxTransactionRequiredError,
} from '../../lib';
import type { OutboxEvent, OutboxMessage } from '../../lib';
import {
  EventRecorder,
  type OutboxFixture,
  RecordingPublisher,
  startOutboxFixture,
} from '../fixtures/outbox/outbox-fixture';
import { eventually } from '../support/eventually';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A poll of one hour: a message published in time was found by the wake-up after commit, not by polling. */
const NO_POLLING = 3_600_000;

describe.each(databaseKinds())('transactional outbox and relay on %s', (kind) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });

  afterAll(async () => {
    await db?.drop();
  });

  describe('writing in the business transaction', () => {
    let f: OutboxFixture;
    let publisher: RecordingPublisher;

    beforeAll(async () => {
      publisher = new RecordingPublisher();
      f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: { publisher, pollIntervalMs: NO_POLLING },
      });
    });

    afterAll(async () => {
      await f?.close();
    });

    it('publishes a committed event with its id, type, headers, partition key and payload, woken by the commit', async () => {
      const id = randomUUID();
      const key = `order-${randomUUID()}`;
      const payload = { total: 12.5, items: ['a', 'b'], note: 'Grüße ✓' };
      const ids = await f.txHost.withTransaction(() =>
        f.outbox.add({
          id,
          type: 'order.placed',
          partitionKey: key,
          headers: { 'x-tenant': 'acme' },
          payload,
        }),
      );
      expect(ids).toEqual([id]);
      const m = await eventually('the message is published', () =>
        publisher.published().find((p) => p.id === id),
      );
      expect(m).toMatchObject({
        id,
        type: 'order.placed',
        partitionKey: key,
        payload,
        attempts: 0,
      });
      expect(m.headers).toEqual({
        'x-tenant': 'acme',
        'message-id': id,
        'message-type': 'order.placed',
        'partition-key': key,
      });
      const row = await eventually('the row is marked sent', async () => {
        const e = await f.admin.get(id);
        return e?.status === 'sent' ? e : undefined;
      });
      expect(row.sentAt).toBeInstanceOf(Date);
      // Publish attempts made, the successful one included; the message saw 0 failed before it.
      expect(row.attempts).toBe(1);
      expect(row.lockedUntil).toBeNull();
    });

    it('adds many events at once, each with a fresh UUID unless given', async () => {
      const ids = await f.txHost.withTransaction(() =>
        f.outbox.add([
          { type: 'bulk.one', payload: 1 },
          { type: 'bulk.two', payload: 'two', partitionKey: null },
          { type: 'bulk.three', payload: [3] },
        ]),
      );
      expect(ids).toHaveLength(3);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
      await eventually('all three are published', () =>
        ids.every((id) => publisher.publishedIds().includes(id)),
      );
      const three = publisher.published().find((m) => m.id === ids[2])!;
      expect(three.payload).toEqual([3]);
      expect(three.partitionKey).toBeNull();
      expect(three.headers['partition-key']).toBeUndefined();
    });

    it('a rolled-back transaction leaves no outbox row and publishes nothing', async () => {
      const rolledBack = randomUUID();
      const committed = randomUUID();
      await expect(
        f.txHost.withTransaction(async () => {
          await f.outbox.add({ id: rolledBack, type: 'test.rollback', payload: { n: 1 } });
          throw new Error('business failure');
        }),
      ).rejects.toThrow('business failure');
      expect(await f.admin.get(rolledBack)).toBeUndefined();
      // A later commit wakes the relay; by the time its message is out, an older row would be too.
      await f.txHost.withTransaction(() =>
        f.outbox.add({ id: committed, type: 'test.rollback', payload: { n: 2 } }),
      );
      await eventually('the committed message is published', () =>
        publisher.publishedIds().includes(committed),
      );
      expect(publisher.calls.some((c) => c.message.id === rolledBack)).toBe(false);
      expect(await f.admin.get(rolledBack)).toBeUndefined();
    });

    it('keeps the outer transaction’s events when a nested savepoint rolls back', async () => {
      const outer = randomUUID();
      const inner = randomUUID();
      await f.txHost.withTransaction(async () => {
        await f.outbox.add({ id: outer, type: 'test.nested', payload: 'outer' });
        await expect(
          f.txHost.withTransaction(Propagation.Nested, async () => {
            await f.outbox.add({ id: inner, type: 'test.nested', payload: 'inner' });
            throw new Error('inner failure');
          }),
        ).rejects.toThrow('inner failure');
      });
      await eventually('the outer message is published', () =>
        publisher.publishedIds().includes(outer),
      );
      expect(publisher.calls.some((c) => c.message.id === inner)).toBe(false);
      expect(await f.admin.get(inner)).toBeUndefined();
    });

    it('refuses to write outside a transaction (no ambient one, or a manager not in one)', async () => {
      const a = randomUUID();
      const b = randomUUID();
      await expect(f.outbox.add({ id: a, type: 'test.notx', payload: {} })).rejects.toBeInstanceOf(
        OutboxTransactionRequiredError,
      );
      await expect(
        f.outbox.add({ id: b, type: 'test.notx', payload: {} }, f.dataSource.manager),
      ).rejects.toBeInstanceOf(OutboxTransactionRequiredError);
      expect(await f.admin.get(a)).toBeUndefined();
      expect(await f.admin.get(b)).toBeUndefined();
    });

    it('writes in the transaction of an explicit EntityManager (apps without nestjs-cls)', async () => {
      const id = randomUUID();
      await f.dataSource.transaction((manager) =>
        f.outbox.add({ id, type: 'test.manager', payload: { via: 'manager' } }, manager),
      );
      const m = await eventually('published', () => publisher.published().find((p) => p.id === id));
      expect(m.payload).toEqual({ via: 'manager' });
      const rolledBack = randomUUID();
      await expect(
        f.dataSource.transaction(async (manager) => {
          await f.outbox.add({ id: rolledBack, type: 'test.manager', payload: {} }, manager);
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      expect(await f.admin.get(rolledBack)).toBeUndefined();
    });

    it.each<[string, OutboxEvent]>([
      ['a type with a space', { type: 'has space', payload: {} }],
      ['an empty type', { type: '', payload: {} }],
      ['no payload', { type: 'ok.type', payload: undefined }],
      ['a payload JSON cannot hold', { type: 'ok.type', payload: { n: BigInt(1) } }],
      [
        'a header the relay sets',
        { type: 'ok.type', payload: {}, headers: { 'Message-Id': 'forged' } },
      ],
      [
        'a header that is not a string',
        { type: 'ok.type', payload: {}, headers: { n: 1 as unknown as string } },
      ],
      [
        'a partition key over 255 characters',
        { type: 'ok.type', payload: {}, partitionKey: 'k'.repeat(256) },
      ],
      ['an id over 128 characters', { type: 'ok.type', payload: {}, id: 'i'.repeat(129) }],
    ])('rejects %s before writing anything of the call', async (_label, bad) => {
      const good = randomUUID();
      await expect(
        f.txHost.withTransaction(() =>
          f.outbox.add([{ id: good, type: 'ok.type', payload: {} }, bad]),
        ),
      ).rejects.toBeInstanceOf(InvalidOutboxEventError);
      expect(await f.admin.get(good)).toBeUndefined();
    });

    it('rejects the same message id twice in one call', async () => {
      const id = randomUUID();
      await expect(
        f.txHost.withTransaction(() =>
          f.outbox.add([
            { id, type: 'a', payload: 1 },
            { id, type: 'b', payload: 2 },
          ]),
        ),
      ).rejects.toThrow(/appears twice/);
      expect(await f.admin.get(id)).toBeUndefined();
    });
  });

  describe('failures, backoff and dead letters', () => {
    let f: OutboxFixture;
    let publisher: RecordingPublisher;
    const poison = new Set<string>();

    beforeAll(async () => {
      publisher = new RecordingPublisher(async (m, attempt) => {
        if (m.type === 'test.flaky' && attempt === 1) throw new Error('flaky first attempt');
        if (m.type === 'test.poison' && poison.has(m.id)) {
          throw new Error(`broker said no (${attempt})`);
        }
        if (m.type === 'test.hang' && attempt === 1) await new Promise(() => undefined);
      });
      f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: {
          publisher,
          pollIntervalMs: 50,
          maxAttempts: 3,
          backoffBaseMs: 400,
          backoffMaxMs: 800,
          publishTimeoutMs: 300,
        },
      });
    });

    afterAll(async () => {
      await f?.close();
    });

    it('records a failed attempt (error, attempts + 1, backed-off next attempt, lease cleared), then publishes', async () => {
      const id = randomUUID();
      await f.txHost.withTransaction(() => f.outbox.add({ id, type: 'test.flaky', payload: {} }));
      // (The retry may already have succeeded when we look: the failure's traces stay on the row.)
      const failed = await eventually('the first failure is recorded', async () => {
        const e = await f.admin.get(id);
        return e && e.lastError ? e : undefined;
      });
      expect(failed.lastError).toContain('flaky first attempt');
      if (failed.status === 'pending') expect(failed.leaseOwner).toBeNull();
      // Equal jitter: the retry is due at least half the base delay (200 ms) after the failure.
      expect(failed.nextAttemptAt!.getTime() - failed.createdAt.getTime()).toBeGreaterThanOrEqual(
        195,
      );
      const sent = await eventually('published on the retry', async () => {
        const e = await f.admin.get(id);
        return e?.status === 'sent' ? e : undefined;
      });
      // One failed attempt and the one that succeeded: what the publisher saw.
      expect(sent.attempts).toBe(2);
      expect(publisher.attemptsOf(id)).toBe(2);
    });

    it('counts a publish that is not confirmed in publishTimeoutMs as a failed attempt', async () => {
      const id = randomUUID();
      await f.txHost.withTransaction(() => f.outbox.add({ id, type: 'test.hang', payload: {} }));
      const failed = await eventually('the timeout is recorded', async () => {
        const e = await f.admin.get(id);
        return e && e.attempts >= 1 ? e : undefined;
      });
      expect(failed.lastError).toContain('did not confirm the message within 300 ms');
      await eventually(
        'published on the retry',
        async () => (await f.admin.get(id))?.status === 'sent',
      );
    });

    it('makes a message dead after maxAttempts, keeps it listable and stops retrying; re-queueing publishes it', async () => {
      const id = randomUUID();
      poison.add(id);
      await f.txHost.withTransaction(() =>
        f.outbox.add({ id, type: 'test.poison', partitionKey: 'p-1', payload: { x: 1 } }),
      );
      const dead = await eventually('the message is dead', async () =>
        (await f.admin.listDead(1000)).find((e) => e.id === id),
      );
      expect(dead.attempts).toBe(3);
      expect(dead.lastError).toContain('broker said no (3)');
      expect(dead.payload).toEqual({ x: 1 });
      expect(publisher.attemptsOf(id)).toBe(3);
      expect(
        (await f.admin.list({ status: 'dead', partitionKey: 'p-1' })).map((e) => e.id),
      ).toContain(id);
      await sleep(300);
      expect(publisher.attemptsOf(id)).toBe(3);
      expect((await f.admin.counts()).dead).toBeGreaterThanOrEqual(1);

      poison.delete(id);
      expect(await f.admin.requeue(id)).toBe(1);
      const sent = await eventually('published after re-queue', async () => {
        const e = await f.admin.get(id);
        return e?.status === 'sent' ? e : undefined;
      });
      // Counted again from the re-queue: the one attempt that succeeded.
      expect(sent.attempts).toBe(1);
      expect(publisher.attemptsOf(id)).toBe(4);
      expect(await f.admin.requeue(randomUUID())).toBe(0);
    });
  });

  describe('broker outages are not failures', () => {
    const refused = () =>
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5672'), { code: 'ECONNREFUSED' });

    it('an outage far longer than maxAttempts × backoffMax uses no attempt: the relay backs off as a whole, resumes, and says so once', async () => {
      let down = true;
      const calls = { failed: 0, ok: 0 };
      const publisher = new FunctionPublisher(async () => {
        if (down) {
          calls.failed++;
          throw refused();
        }
        calls.ok++;
      });
      const logs = new EventRecorder();
      const f = await startOutboxFixture({
        dbUrl: db.url,
        logger: logs,
        outbox: {
          publisher,
          pollIntervalMs: 50,
          maxAttempts: 2,
          backoffBaseMs: 20,
          backoffMaxMs: 100,
          publishTimeoutMs: 300,
        },
      });
      try {
        const ids = Array.from({ length: 5 }, () => randomUUID());
        await f.txHost.withTransaction(() =>
          f.outbox.add(ids.map((id) => ({ id, type: 'test.outage', payload: {} }))),
        );
        // Publishes during the outage: each would have been an attempt before, and 2 made a message dead.
        await eventually('the relay has tried many times', () => calls.failed >= 5 * 2 * 4);
        // Messages written during the outage wake the relay, which keeps backing off.
        const later = randomUUID();
        await f.txHost.withTransaction(() =>
          f.outbox.add({ id: later, type: 'test.outage', payload: {} }),
        );
        await eventually('the later message was tried too', async () =>
          (await f.admin.get(later))?.lastError ? true : undefined,
        );
        const during = await Promise.all([...ids, later].map((id) => f.admin.get(id)));
        for (const e of during) {
          expect(e).toMatchObject({ status: 'pending', attempts: 0 });
          expect(e!.lastError).toContain('the broker was unreachable (no attempt counted)');
          expect(e!.lastError).toContain('ECONNREFUSED');
        }
        const status = f.relay.status;
        expect(status).toMatchObject({ state: 'running', failed: 0, dead: 0 });
        expect(status.unavailable).toBeGreaterThanOrEqual(5 * 2 * 4);
        expect(status.outage).toMatchObject({ reason: 'broker' });
        expect(status.outage!.passes).toBeGreaterThan(2);
        expect(status.outage!.lastError).toContain('ECONNREFUSED');
        expect((await f.admin.counts()).dead).toBe(0);

        down = false;
        for (const id of [...ids, later]) {
          const sent = await eventually(`${id} published after the outage`, async () => {
            const e = await f.admin.get(id);
            return e?.status === 'sent' ? e : undefined;
          });
          // Only the publish that went through counted.
          expect(sent.attempts).toBe(1);
        }
        await eventually('the relay is no longer backing off', () => !f.relay.status.outage);
        expect(f.relay.status).toMatchObject({ failed: 0, dead: 0, outage: null });
        // One line when it began, one when it ended, however many passes it took.
        expect(logs.named('outbox.relay.backing-off')).toHaveLength(1);
        expect(logs.named('outbox.relay.backing-off')[0]).toMatchObject({ reason: 'broker' });
        const recovered = logs.named('outbox.relay.recovered');
        expect(recovered).toHaveLength(1);
        expect(recovered[0]).toMatchObject({ reason: 'broker' });
        expect(recovered[0].downMs).toBeGreaterThan(0);
        expect(recovered[0].passes).toBeGreaterThan(2);
        expect(logs.named('outbox.failed')).toHaveLength(0);
        expect(logs.named('outbox.dead')).toHaveLength(0);
      } finally {
        await f.close();
      }
    });

    it('a batch where the broker refuses one message and is unreachable for others: only the refusal is an attempt', async () => {
      const poison = randomUUID();
      let down = true;
      const publisher = new FunctionPublisher(async (m) => {
        if (m.id === poison) throw new Error('message too large');
        if (down) throw refused();
      });
      const f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: {
          publisher,
          pollIntervalMs: NO_POLLING,
          relayEnabled: false,
          maxAttempts: 3,
          backoffBaseMs: 0,
          backoffMaxMs: 0,
        },
      });
      try {
        const other = randomUUID();
        await f.txHost.withTransaction(() =>
          f.outbox.add([
            { id: poison, type: 'test.outage-mixed', payload: {} },
            { id: other, type: 'test.outage-mixed', payload: {} },
          ]),
        );
        const first = await f.relay.runOnce(publisher);
        expect(first).toMatchObject({ claimed: 2, failed: 1, unavailable: 1, published: 0 });
        expect(await f.admin.get(poison)).toMatchObject({ attempts: 1, status: 'pending' });
        expect(await f.admin.get(other)).toMatchObject({ attempts: 0, status: 'pending' });
        await f.relay.runOnce(publisher);
        await f.relay.runOnce(publisher);
        expect(await f.admin.get(poison)).toMatchObject({ attempts: 3, status: 'dead' });
        expect(await f.admin.get(other)).toMatchObject({ attempts: 0, status: 'pending' });
        down = false;
        expect(await f.relay.runOnce(publisher)).toMatchObject({ published: 1, unavailable: 0 });
        expect(await f.admin.get(other)).toMatchObject({ attempts: 1, status: 'sent' });
      } finally {
        await f.close();
      }
    });
  });

  describe('per-partition-key ordering', () => {
    const relays = kind === 'sqlite' ? 1 : 3;

    it(`never publishes a key's message while an older one is pending or in flight (${relays} relay(s), random failures)`, async () => {
      const keys = Array.from({ length: 8 }, (_, i) => `key-${i}-${randomUUID().slice(0, 8)}`);
      const perKey = 10;
      const index = new Map<string, { key: string; i: number }>();
      const lastOk = new Map<string, number>();
      const inFlight = new Set<string>();
      const violations: string[] = [];
      const okCount = new Map<string, number>();
      const behaviour = async (m: OutboxMessage) => {
        const at = index.get(m.id);
        if (!at) return; // not ours
        if (inFlight.has(at.key)) {
          violations.push(
            `${at.key}: #${at.i} published while another message of the key was in flight`,
          );
        }
        if ((lastOk.get(at.key) ?? -1) !== at.i - 1) {
          violations.push(`${at.key}: #${at.i} published after #${lastOk.get(at.key) ?? 'none'}`);
        }
        inFlight.add(at.key);
        try {
          await sleep(Math.random() * 4);
          if (Math.random() < 0.15) throw new Error('random broker failure');
          lastOk.set(at.key, at.i);
          okCount.set(m.id, (okCount.get(m.id) ?? 0) + 1);
        } finally {
          inFlight.delete(at.key);
        }
      };
      const fixtures: OutboxFixture[] = [];
      try {
        for (let r = 0; r < relays; r++) {
          fixtures.push(
            await startOutboxFixture({
              dbUrl: db.url,
              pool: 4,
              outbox: {
                publisher: new RecordingPublisher(behaviour),
                ordered: true,
                batchSize: 5,
                pollIntervalMs: 20,
                backoffBaseMs: 10,
                backoffMaxMs: 40,
                maxAttempts: 100,
              },
            }),
          );
        }
        const writer = fixtures[0];
        for (let i = 0; i < perKey; i++) {
          const events = [...keys]
            .sort(() => Math.random() - 0.5)
            .map((key) => {
              const id = randomUUID();
              index.set(id, { key, i });
              return { id, type: 'test.ordered', partitionKey: key, payload: { key, i } };
            });
          await writer.txHost.withTransaction(() => writer.outbox.add(events));
        }
        await eventually(
          'every message is published',
          () => okCount.size === keys.length * perKey,
          60_000,
        );
        expect(violations).toEqual([]);
        expect([...okCount.values()].every((n) => n === 1)).toBe(true);
        for (const key of keys) expect(lastOk.get(key)).toBe(perKey - 1);
      } finally {
        for (const f of fixtures) await f.close();
      }
    });
  });

  describe('lifecycle', () => {
    it('is not started with relayEnabled: false; a pass run by hand claims at most batchSize, oldest first', async () => {
      const publisher = new RecordingPublisher();
      const f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: { publisher, relayEnabled: false, batchSize: 10 },
      });
      try {
        expect(f.relay.status.state).toBe('idle');
        const ids = Array.from({ length: 25 }, () => randomUUID());
        await f.txHost.withTransaction(() =>
          f.outbox.add(ids.map((id, i) => ({ id, type: 'test.writer-only', payload: { i } }))),
        );
        await sleep(200);
        expect(publisher.calls).toHaveLength(0);
        expect((await f.admin.get(ids[0]))?.status).toBe('pending');
        // Another process (here: passes run by hand) publishes them, batchSize at a time, in sequence order.
        const first = await f.relay.runOnce(publisher);
        expect(first).toMatchObject({ claimed: 10, published: 10, failed: 0 });
        expect(publisher.publishedIds()).toEqual(ids.slice(0, 10));
        expect((await f.relay.runOnce(publisher)).claimed).toBe(10);
        expect((await f.relay.runOnce(publisher)).claimed).toBe(5);
        expect((await f.relay.runOnce(publisher)).claimed).toBe(0);
        expect([...publisher.publishedIds()].sort()).toEqual([...ids].sort());
      } finally {
        await f.close();
      }
    });

    it('on shutdown stops claiming, lets the in-flight batch finish and marks it sent', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let started = false;
      const publisher = new RecordingPublisher(async () => {
        started = true;
        await gate;
      });
      const f = await startOutboxFixture({
        dbUrl: db.url,
        outbox: { publisher, pollIntervalMs: NO_POLLING },
      });
      const id = randomUUID();
      await f.txHost.withTransaction(() =>
        f.outbox.add({ id, type: 'test.shutdown', payload: {} }),
      );
      await eventually('publishing has started', () => started);
      const closing = f.close();
      await sleep(100);
      release();
      await closing;
      expect(f.relay.status.state).toBe('idle');
      const ds = await openDataSource(db.url);
      try {
        const rows = await ds.query(
          `SELECT status FROM outbox_messages WHERE id = ${placeholder(kind, 0)}`,
          [id],
        );
        expect(rows[0].status).toBe('sent');
      } finally {
        await ds.destroy();
      }
    });
  });
  describe('bounded shutdown', () => {
    it('stops waiting for a publish that hangs after outbox.shutdownTimeoutMs; the message stays pending and is published after its lease', async () => {
      let started = false;
      const hanging = new FunctionPublisher(() => {
        started = true;
        return new Promise(() => undefined);
      });
      const logs = new EventRecorder();
      const f = await startOutboxFixture({
        dbUrl: db.url,
        logger: logs,
        outbox: {
          publisher: hanging,
          pollIntervalMs: NO_POLLING,
          leaseMs: 4000,
          publishTimeoutMs: 3500,
          shutdownTimeoutMs: 200,
        },
      });
      const id = randomUUID();
      await f.txHost.withTransaction(() => f.outbox.add({ id, type: 'test.hung', payload: {} }));
      await eventually('publishing has started', () => started);
      await f.close();
      expect(logs.named('outbox.relay.stop-timed-out')).toHaveLength(1);
      // Another process (a fresh relay) publishes it once the lease has lapsed.
      const publisher = new RecordingPublisher();
      const next = await startOutboxFixture({
        dbUrl: db.url,
        outbox: { publisher, pollIntervalMs: 200 },
      });
      try {
        const sent = await eventually(
          'published by the next relay',
          async () => {
            const e = await next.admin.get(id);
            return e?.status === 'sent' ? e : undefined;
          },
          30_000,
        );
        expect(sent.attempts).toBe(1);
        expect(publisher.publishedIds()).toEqual([id]);
      } finally {
        await next.close();
      }
    });
  });

  // A lock time-out is what PostgreSQL lets a test cause on the relay's own connections (the
  // database's lock_timeout); a deadlock victim or a lost connection takes the same path.
  if (kind === 'postgres') {
    describe('a batch whose mark fails for now after it was published', () => {
      it('marks it again a moment later: sent once, under its lease, nothing published twice', async () => {
        const LOCK_TIMEOUT_MS = 300;
        const ds = await openDataSource(db.url);
        const name = new URL(db.url).pathname.slice(1);
        // Every connection the relay opens from now on gives up a lock wait after 300 ms.
        await ds.query(`ALTER DATABASE ${name} SET lock_timeout = '${LOCK_TIMEOUT_MS}ms'`);
        const holder = ds.createQueryRunner();
        const ids = [randomUUID(), randomUUID(), randomUUID()];
        let held = false;
        // While the batch is published, another transaction takes a row lock on its last message.
        const publisher = new RecordingPublisher(async (m) => {
          if (m.id !== ids[2]) return;
          await holder.connect();
          await holder.startTransaction();
          await holder.query(`UPDATE outbox_messages SET attempts = attempts WHERE id = $1`, [
            m.id,
          ]);
          held = true;
        });
        const f = await startOutboxFixture({
          dbUrl: db.url,
          outbox: { publisher, relayEnabled: false, batchSize: 10 },
        });
        try {
          await f.txHost.withTransaction(() =>
            f.outbox.add(ids.map((id, i) => ({ id, type: 'test.mark-retried', payload: { i } }))),
          );
          const pass = f.relay.runOnce(publisher);
          // The mark waits for that lock; it is held past the relay's lock time-out, so the first
          // attempt fails (55P03, "canceling statement due to lock timeout"), then released.
          await eventually('the mark waits for the held row', async () => {
            if (!held) return false;
            const [{ n }] = await ds.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock'
                  AND query LIKE 'UPDATE % SET attempts = attempts + 1, status = ''sent''%'`,
            );
            return n > 0;
          });
          await sleep(LOCK_TIMEOUT_MS + 200);
          await holder.rollbackTransaction();
          const result = await pass;
          expect(result).toMatchObject({ claimed: 3, published: 3, failed: 0 });
          const rows = await Promise.all(ids.map((id) => f.admin.get(id)));
          for (const row of rows) {
            expect(row).toMatchObject({ status: 'sent', attempts: 1 });
            expect(String(row!.leaseOwner).startsWith(`${f.relay.relayId}#`)).toBe(true);
          }
          // Nothing left for another relay to publish again: no pass claims anything.
          expect((await f.relay.runOnce(publisher)).claimed).toBe(0);
          expect([...publisher.publishedIds()].sort()).toEqual([...ids].sort());
        } finally {
          if (holder.isTransactionActive) await holder.rollbackTransaction();
          await holder.release();
          await f.close();
          await ds.query(`ALTER DATABASE ${name} RESET lock_timeout`);
          await ds.destroy();
        }
      });
    });
  }
});
