import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import { TransactionHost } from '@nestjs-cls/transactional';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { InboxMessageFailedError, InboxService } from '../../lib';
import type { InboxResult } from '../../lib';
import { EffectsWriter, InboxFixtureModule } from '../fixtures/inbox/inbox-fixture.module';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(databaseKinds())('InboxService on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplicationContext;
  let inbox: InboxService;
  let effects: EffectsWriter;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await NestFactory.createApplicationContext(
      InboxFixtureModule.register({ dbUrl: db.url, inbox: { maxAttempts: 3 } }),
      {
        logger: false,
      },
    );
    await app.init();
    inbox = app.get(InboxService);
    effects = app.get(EffectsWriter);
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    await app?.close();
    await db?.drop();
  });

  const count = async (consumer: string, messageId: string): Promise<number> => {
    // Compared in JS: the effects table has the database's default (maybe case-insensitive) collation.
    const rows: Array<{ message_id: string }> = await ds.query(
      `SELECT message_id FROM inbox_effects WHERE consumer = ${placeholder(kind, 0)} AND message_id = ${placeholder(kind, 1)}`,
      [consumer, messageId],
    );
    return rows.filter((r) => r.message_id === messageId).length;
  };
  const write = (consumer: string, id: string) => () => effects.record(consumer, id);

  it('runs the handler once when the same message is delivered 5 times', async () => {
    const id = randomUUID();
    const results: InboxResult<void>[] = [];
    for (let i = 0; i < 5; i++) {
      results.push(await inbox.process('ledger', id, write('ledger', id)));
    }
    expect(results.map((r) => r.status)).toEqual([
      'processed',
      'duplicate',
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    expect(results.slice(1).every((r) => r.duplicate)).toBe(true);
    expect(await count('ledger', id)).toBe(1);
    const row = await inbox.find('ledger', id);
    expect(row).toMatchObject({
      consumer: 'ledger',
      messageId: id,
      status: 'processed',
      attempts: 1,
      lastError: null,
    });
    expect(row!.receivedAt.getTime()).not.toBeNaN();
    expect(row!.processedAt).toBeInstanceOf(Date);
  });

  it('runs the handler once under 5 concurrent deliveries: the others wait for the commit, then skip', async () => {
    const id = randomUUID();
    let runs = 0;
    const handler = async () => {
      runs++;
      await effects.record('ledger', id);
      await sleep(300);
      return 'done';
    };
    const results = await Promise.all(
      Array.from({ length: 5 }, () => inbox.process('ledger', id, handler)),
    );
    expect(runs).toBe(1);
    expect(results.filter((r) => r.status === 'processed')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'duplicate')).toHaveLength(4);
    expect(results.find((r) => r.status === 'processed')).toMatchObject({
      result: 'done',
      attempts: 1,
    });
    expect(await count('ledger', id)).toBe(1);
  });

  it('lets a delivery waiting on an uncommitted first one run when the first rolls back', async () => {
    const id = randomUUID();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = inbox.process('ledger', id, async () => {
      await effects.record('ledger', id);
      await gate;
      throw new Error('first delivery failed');
    });
    await sleep(100);
    const second = inbox.process('ledger', id, write('ledger', id));
    await sleep(200);
    release();
    const [a, b] = await Promise.allSettled([first, second]);
    expect(b).toMatchObject({ status: 'fulfilled', value: { status: 'processed' } });
    // The first either rethrows its error or, when the second committed before its failure was
    // counted, reports the message as handled by the other delivery.
    if (a.status === 'rejected') expect((a.reason as Error).message).toBe('first delivery failed');
    else expect(a.value.status).toBe('duplicate');
    expect(await count('ledger', id)).toBe(1);
    expect(await inbox.find('ledger', id)).toMatchObject({ status: 'processed' });
  });

  it('rolls back the effects and the record of a failed handler, then runs it again on redelivery', async () => {
    const id = randomUUID();
    await expect(
      inbox.process('ledger', id, async () => {
        await effects.record('ledger', id);
        throw new Error('ledger unavailable');
      }),
    ).rejects.toThrow('ledger unavailable');
    expect(await count('ledger', id)).toBe(0);
    expect(await inbox.find('ledger', id)).toMatchObject({
      status: 'retrying',
      attempts: 1,
      processedAt: null,
      lastError: 'Error: ledger unavailable',
    });

    const again = await inbox.process('ledger', id, write('ledger', id));
    expect(again).toMatchObject({ status: 'processed', attempts: 2 });
    expect(await count('ledger', id)).toBe(1);
    expect(await inbox.find('ledger', id)).toMatchObject({ status: 'processed', attempts: 2 });
    expect(await inbox.process('ledger', id, write('ledger', id))).toMatchObject({
      status: 'duplicate',
    });
    expect(await count('ledger', id)).toBe(1);
  });

  it('counts every failure when many different messages fail at once (no count lost to a deadlock)', async () => {
    // Ids that sort next to each other, so the failure records fall into one index gap: on InnoDB
    // an UPDATE-before-INSERT count deadlocked here and the loser's attempt went uncounted.
    const prefix = `burst-${randomUUID().slice(0, 8)}`;
    const ids = Array.from({ length: 8 }, (_, i) => `${prefix}-${i}`);
    const outcomes = await Promise.allSettled(
      ids.map((id) =>
        inbox.process('burst', id, async () => {
          await effects.record('burst', id);
          await sleep(20);
          throw new Error(`burst ${id} failed`);
        }),
      ),
    );
    for (const o of outcomes) {
      expect(o.status).toBe('rejected');
      expect(((o as PromiseRejectedResult).reason as Error).message).toMatch(/^burst .* failed$/);
    }
    for (const id of ids) {
      expect(await inbox.find('burst', id)).toMatchObject({ status: 'retrying', attempts: 1 });
      expect(await count('burst', id)).toBe(0);
    }
    // The redeliveries all succeed, each as the second attempt.
    const again = await Promise.all(
      ids.map((id) => inbox.process('burst', id, write('burst', id))),
    );
    for (const r of again) expect(r).toMatchObject({ status: 'processed', attempts: 2 });
    for (const id of ids) expect(await count('burst', id)).toBe(1);
  });

  it('answers redeliveries with one read once most deliveries of a consumer are redeliveries', async () => {
    const consumer = 'redelivered';
    const ids = Array.from({ length: 30 }, () => randomUUID());
    for (const id of ids) {
      expect((await inbox.process(consumer, id, write(consumer, id))).status).toBe('processed');
    }
    // The statements the app sends for one delivery, by first word (BEGIN/START, INSERT, SELECT…).
    const logger = app.get<DataSource>(getDataSourceToken()).logger;
    const spy = jest.spyOn(logger, 'logQuery');
    const statementsOf = async (id: string) => {
      spy.mockClear();
      const r = await inbox.process(consumer, id, write(consumer, id));
      const words = spy.mock.calls.map((c) => String(c[0]).trim().split(/\s+/)[0].toUpperCase());
      // The claim: an INSERT (a T-SQL batch starting with DECLARE on SQL Server).
      return {
        status: r.status,
        words,
        claimed: words.includes('INSERT') || words.includes('DECLARE'),
      };
    };
    try {
      // After 30 first deliveries the consumer claims at once: a redelivery runs the claim.
      const early = await statementsOf(ids[0]);
      expect(early.status).toBe('duplicate');
      expect(early.claimed).toBe(true);
      // Redeliveries become the majority: from then on one read answers them (not on SQL Server,
      // where a read would queue behind an in-flight claim).
      for (let round = 0; round < 2; round++) {
        for (const id of ids) {
          expect((await inbox.process(consumer, id, write(consumer, id))).status).toBe('duplicate');
        }
      }
      const late = await statementsOf(ids[7]);
      expect(late.status).toBe('duplicate');
      if (kind === 'mssql') expect(late.claimed).toBe(true);
      else expect(late.words).toEqual(['SELECT']);
      for (const id of ids) expect(await count(consumer, id)).toBe(1);

      // A new message while the read is on: the read finds nothing, the claim runs it once.
      const fresh = randomUUID();
      const first = await statementsOf(fresh);
      expect(first.status).toBe('processed');
      expect(first.claimed).toBe(true);
      expect(await count(consumer, fresh)).toBe(1);
      // New messages become the majority again: the read stops, the claim is the first statement.
      for (let i = 0; i < 40; i++) {
        const id = randomUUID();
        expect((await inbox.process(consumer, id, write(consumer, id))).status).toBe('processed');
      }
      const back = await statementsOf(randomUUID());
      expect(back.status).toBe('processed');
      expect(back.claimed).toBe(true);
      expect(back.words[0]).not.toBe('SELECT');
    } finally {
      spy.mockRestore();
    }
  });

  it('keys the record by consumer: two consumers of one message each process it once', async () => {
    const id = randomUUID();
    for (let i = 0; i < 3; i++) {
      await inbox.process('ledger', id, write('ledger', id));
      await inbox.process('mailer', id, write('mailer', id));
    }
    expect(await count('ledger', id)).toBe(1);
    expect(await count('mailer', id)).toBe(1);
  });

  it('compares message ids case-sensitively (binary collations)', async () => {
    const id = `Msg-${randomUUID()}`;
    for (const variant of [id, id.toLowerCase(), id.toUpperCase()]) {
      expect(await inbox.process('exact', variant, write('exact', variant))).toMatchObject({
        status: 'processed',
      });
    }
    expect(await count('exact', id)).toBe(1);
    expect(await count('exact', id.toLowerCase())).toBe(1);
  });

  it('records the message as failed and acknowledges it after maxAttempts', async () => {
    const id = randomUUID();
    let runs = 0;
    const failing = async () => {
      runs++;
      await effects.record('ledger', id);
      throw new Error(`attempt ${runs} failed`);
    };
    await expect(inbox.process('ledger', id, failing)).rejects.toThrow('attempt 1 failed');
    await expect(inbox.process('ledger', id, failing)).rejects.toThrow('attempt 2 failed');
    const third = await inbox.process('ledger', id, failing);
    expect(third).toMatchObject({ status: 'failed', duplicate: false, attempts: 3 });
    expect((third as any).error.message).toBe('attempt 3 failed');
    const row = await inbox.find('ledger', id);
    expect(row).toMatchObject({
      status: 'failed',
      attempts: 3,
      lastError: 'Error: attempt 3 failed',
    });
    expect(row!.processedAt).toBeInstanceOf(Date);

    expect(await inbox.process('ledger', id, failing)).toMatchObject({
      status: 'failed',
      duplicate: true,
      attempts: 3,
    });
    expect(runs).toBe(3);
    expect(await count('ledger', id)).toBe(0);
  });

  it("with onMaxAttempts 'rethrow' keeps failing the delivery and refuses a failed message", async () => {
    const id = randomUUID();
    let runs = 0;
    const failing = async () => {
      runs++;
      throw new Error('poison');
    };
    const opts = { maxAttempts: 2, onMaxAttempts: 'rethrow' as const };
    await expect(inbox.process('strict', id, failing, opts)).rejects.toThrow('poison');
    await expect(inbox.process('strict', id, failing, opts)).rejects.toThrow('poison');
    expect(await inbox.find('strict', id)).toMatchObject({ status: 'failed', attempts: 2 });
    const refused = inbox.process('strict', id, failing, opts);
    await expect(refused).rejects.toBeInstanceOf(InboxMessageFailedError);
    await expect(refused).rejects.toThrow(
      /recorded as failed after 2 attempt\(s\) \(last error: Error: poison\)/,
    );
    expect(runs).toBe(2);
  });

  it('reset() lets a failed message run again', async () => {
    const id = randomUUID();
    const boom = async () => {
      throw new Error('boom');
    };
    const opts = { maxAttempts: 1 };
    expect(await inbox.process('reset', id, boom, opts)).toMatchObject({
      status: 'failed',
      attempts: 1,
    });
    expect(await inbox.reset('reset', id)).toBe(true);
    expect(await inbox.find('reset', id)).toBeUndefined();
    expect(await inbox.process('reset', id, write('reset', id), opts)).toMatchObject({
      status: 'processed',
      attempts: 1,
    });
    expect(await count('reset', id)).toBe(1);
  });

  it('joins an active transaction: record and effects commit or roll back with it', async () => {
    const txHost = TransactionHost.getInstance();
    const id = randomUUID();
    await expect(
      txHost.withTransaction(async () => {
        await inbox.process('joined', id, write('joined', id));
        throw new Error('outer rolled back');
      }),
    ).rejects.toThrow('outer rolled back');
    expect(await count('joined', id)).toBe(0);
    expect(await inbox.find('joined', id)).toBeUndefined();

    const committed = await txHost.withTransaction(() =>
      inbox.process('joined', id, write('joined', id)),
    );
    expect(committed.status).toBe('processed');
    expect(
      await txHost.withTransaction(() => inbox.process('joined', id, write('joined', id))),
    ).toMatchObject({ status: 'duplicate' });
    expect(await count('joined', id)).toBe(1);
  });

  it('refuses an empty or over-long message id or consumer with a clear error and writes nothing', async () => {
    const handler = jest.fn();
    await expect(inbox.process('ledger', '', handler)).rejects.toThrow(
      /message id .* non-empty string of at most 255/,
    );
    await expect(inbox.process('ledger', 'x'.repeat(256), handler)).rejects.toThrow(
      /at most 255 characters/,
    );
    await expect(inbox.process('', 'id-1', handler)).rejects.toThrow(
      /consumer name must be a non-empty string/,
    );
    await expect(inbox.process('ledger', 'id-1', handler, { maxAttempts: 0 })).rejects.toThrow(
      /maxAttempts must be a positive integer/,
    );
    expect(handler).not.toHaveBeenCalled();
    expect(await inbox.find('ledger', 'id-1')).toBeUndefined();
  });
});

describe.each(databaseKinds())('InboxService with a configured table name on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplicationContext;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await NestFactory.createApplicationContext(
      InboxFixtureModule.register({ dbUrl: db.url, inboxTable: 'consumer_inbox' }),
      { logger: false },
    );
    await app.init();
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    await app?.close();
    await db?.drop();
  });

  it('records messages in options.tables.inbox, created by the migration under that name', async () => {
    const inbox = app.get(InboxService);
    const effects = app.get(EffectsWriter);
    const id = randomUUID();
    expect(await inbox.process('custom', id, () => effects.record('custom', id))).toMatchObject({
      status: 'processed',
    });
    expect(await inbox.process('custom', id, () => effects.record('custom', id))).toMatchObject({
      status: 'duplicate',
    });
    const rows = await ds.query(
      `SELECT status FROM consumer_inbox WHERE message_id = ${placeholder(kind, 0)}`,
      [id],
    );
    expect(rows).toEqual([{ status: 'processed' }]);
    const tablesSql =
      kind === 'sqlite'
        ? `SELECT name FROM sqlite_master WHERE type = 'table'`
        : kind === 'mariadb'
          ? `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()`
          : `SELECT table_name AS name FROM information_schema.tables`;
    const names = (await ds.query(tablesSql)).map((r: any) =>
      String(r.name ?? r.NAME ?? r.TABLE_NAME),
    );
    expect(names).toContain('consumer_inbox');
    expect(names).not.toContain('inbox_messages');
  });
});
