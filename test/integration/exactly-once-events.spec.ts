import { Body, Controller, Post, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TransactionHost } from '@nestjs-cls/transactional';
import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Subscription } from 'rxjs';
import type { DataSource } from 'typeorm';
import {
  EVENT_CHANNELS,
  ExactlyOnceEvents,
  FunctionPublisher,
  Idempotent,
  InboxService,
  OutboxRelay,
  OutboxService,
  type ExactlyOnceEvent,
  type ExactlyOnceEventFamily,
} from '../../lib';
import { InboxFixtureModule } from '../fixtures/inbox/inbox-fixture.module';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { baseUrl } from '../support/sample-app';

@Controller('events')
class EventsController {
  @Post()
  @Idempotent()
  create(@Body() body: { n: number }): { n: number } {
    return { n: body.n };
  }
}

/** The three outlets of the event union, each recorded on its own. */
class Outlets {
  readonly hook: ExactlyOnceEvent[] = [];
  readonly stream: ExactlyOnceEvent[] = [];
  readonly channels: ExactlyOnceEvent[] = [];
  private subscription?: Subscription;
  private readonly onChannel = (message: unknown) =>
    this.channels.push(message as ExactlyOnceEvent);

  start(events: ExactlyOnceEvents): void {
    this.subscription = events.events$.subscribe((e) => this.stream.push(e));
    for (const name of Object.values(EVENT_CHANNELS)) subscribe(name, this.onChannel);
  }

  stop(): void {
    this.subscription?.unsubscribe();
    for (const name of Object.values(EVENT_CHANNELS)) unsubscribe(name, this.onChannel);
  }

  /** The events of a family about `id` (a message id or consumer), per outlet. */
  of(family: ExactlyOnceEventFamily, match: (e: any) => boolean): string[][] {
    return [this.hook, this.stream, this.channels].map((list) =>
      list.filter((e) => e.type.startsWith(`${family}.`) && match(e)).map((e) => e.type),
    );
  }
}

/**
 * One event union for gate, relay and inbox: every family arrives, the same, through the module's
 * `onEvent`, `ExactlyOnceEvents.events$` and its diagnostics channel (`EVENT_CHANNELS`).
 */
describe.each(databaseKinds())(
  'ExactlyOnceEvent through onEvent, events$ and channels on %s',
  (kind) => {
    let db: TestDatabase;
    let app: INestApplication;
    let ds: DataSource;
    const outlets = new Outlets();

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      app = await NestFactory.create(
        InboxFixtureModule.register({
          dbUrl: db.url,
          inbox: { maxAttempts: 1 },
          controllers: [EventsController],
          idempotency: {
            onEvent: (e) => outlets.hook.push(e),
            outbox: { relayEnabled: false, maxAttempts: 2, backoffBaseMs: 0, backoffMaxMs: 0 },
          },
        }),
        { logger: false },
      );
      await app.listen(0, '127.0.0.1');
      outlets.start(app.get(ExactlyOnceEvents));
      ds = await openDataSource(db.url);
    });

    afterAll(async () => {
      outlets.stop();
      await ds?.destroy();
      await app?.close();
      await db?.drop();
    });

    it('gate: created and replayed', async () => {
      const url = `${await baseUrl(app)}/events`;
      const key = randomUUID();
      const post = () =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ n: 1 }),
        });
      expect((await post()).status).toBe(201);
      expect((await post()).headers.get('idempotency-replayed')).toBe('true');
      const seen = outlets.of('gate', (e) => e.path === '/events' && e.method === 'POST');
      expect(seen[0]).toEqual(['gate.created', 'gate.replayed']);
      expect(seen).toEqual([seen[0], seen[0], seen[0]]);
    });

    it('relay: published, retry, dead and lease lost', async () => {
      const outbox = app.get(OutboxService);
      const relay = app.get(OutboxRelay);
      const tx = app.get(TransactionHost);
      const ok = `ok.${randomUUID().slice(0, 8)}`;
      const bad = `bad.${randomUUID().slice(0, 8)}`;
      const [okId, badId] = await tx.withTransaction(() =>
        outbox.add([
          { type: ok, payload: {} },
          { type: bad, payload: {} },
        ]),
      );
      const publisher = new FunctionPublisher(
        (m) => {
          if (m.type === bad) throw new Error('refused by the broker');
        },
        { isUnavailable: () => false },
      );
      await relay.runOnce(publisher); // ok published, bad retried (attempt 1 of 2)
      await relay.runOnce(publisher); // bad dead (attempt 2 of 2)
      // Another relay takes the row over while this one publishes: the mark finds it no longer ours.
      const [stolenId] = await tx.withTransaction(() =>
        outbox.add({ type: `stolen.${randomUUID().slice(0, 8)}`, payload: {} }),
      );
      const result = await relay.runOnce(
        new FunctionPublisher(async (m) => {
          await ds.query(
            `UPDATE outbox_messages SET lease_owner = ${placeholder(kind, 0)} WHERE id = ${placeholder(kind, 1)}`,
            ['another-relay#1', m.id],
          );
        }),
      );
      expect(result.published).toBe(1);
      const about = (id: string) => (e: any) => e.messageId === id;
      for (const seen of [outlets.of('relay', about(okId)), outlets.of('relay', about(badId))]) {
        expect(seen).toEqual([seen[0], seen[0], seen[0]]);
      }
      expect(outlets.of('relay', about(okId))[0]).toEqual(['relay.published']);
      expect(outlets.of('relay', about(badId))[0]).toEqual(['relay.retry', 'relay.dead']);
      expect(
        outlets.stream.find((e) => e.type === 'relay.dead' && e.messageId === badId),
      ).toMatchObject({
        kind: 'dead',
        eventType: bad,
        attempts: 2,
        error: expect.stringContaining('refused by the broker'),
      });
      const lost = outlets.of(
        'relay',
        (e) => e.type === 'relay.lease-lost' || e.messageId === stolenId,
      );
      expect(lost[0]).toEqual(['relay.lease-lost', 'relay.published']);
      expect(lost).toEqual([lost[0], lost[0], lost[0]]);
      expect(outlets.hook.find((e) => e.type === 'relay.lease-lost')).toMatchObject({
        published: 1,
        marked: 0,
      });
    });

    it('inbox: processed, duplicate and failed', async () => {
      const inbox = app.get(InboxService);
      const consumer = `events-${randomUUID().slice(0, 8)}`;
      const id = randomUUID();
      await inbox.process(consumer, id, () => undefined);
      await inbox.process(consumer, id, () => undefined);
      const failing = randomUUID();
      const result = await inbox.process(consumer, failing, () => {
        throw new Error('handler failed');
      });
      expect(result.status).toBe('failed');
      const seen = outlets.of('inbox', (e) => e.consumer === consumer);
      expect(seen[0]).toEqual(['inbox.processed', 'inbox.duplicate', 'inbox.failed']);
      expect(seen).toEqual([seen[0], seen[0], seen[0]]);
      expect(
        outlets.channels.find((e) => e.type === 'inbox.failed' && e.consumer === consumer),
      ).toMatchObject({
        messageId: failing,
        attempts: 1,
        error: expect.stringContaining('handler failed'),
      });
    });
  },
);
