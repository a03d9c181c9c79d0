import { Propagation } from '@nestjs-cls/transactional';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { InvalidOutboxEventError } from '../../lib';
import {
  type OutboxFixture,
  RecordingPublisher,
  startOutboxFixture,
} from '../fixtures/outbox/outbox-fixture';
import { eventually } from '../support/eventually';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Commit order per partition key (the default `outbox.ordered`) and delayed messages, on every
 * database, with the relay in this process. The multi-process proof (three relays, SIGKILLs,
 * concurrent writers) is test/e2e/outbox-commit-order.spec.ts.
 */
describe.each(databaseKinds())('outbox: commit order per key and delays on %s', (kind) => {
  let db: TestDatabase;
  let f: OutboxFixture;
  let publisher: RecordingPublisher;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    publisher = new RecordingPublisher();
    // Default options (ordered is the default), a short poll for the delayed messages.
    f = await startOutboxFixture({ dbUrl: db.url, outbox: { publisher, pollIntervalMs: 100 } });
  });

  afterAll(async () => {
    await f?.close();
    await db?.drop();
  });

  const publishedOf = (key: string) =>
    publisher
      .published()
      .filter((m) => m.partitionKey === key)
      .map((m) => (m.payload as { n: string }).n);

  /**
   * The scenario: T1 adds for K and commits 1.5 s later; T2 adds for K 0.3 s after T1
   * and commits at once. `begin` runs a transaction its own way (ambient or EntityManager).
   */
  const whyScenario = async (
    begin: (n: string, fn: (add: () => Promise<unknown>) => Promise<void>) => Promise<void>,
  ) => {
    const key = `acct-${randomUUID()}`;
    keyOf.current = key;
    const committed: string[] = [];
    const t1 = begin('T1', async (add) => {
      await add();
      await sleep(1500);
    }).then(() => committed.push('T1'));
    await sleep(300);
    const t2 = begin('T2', async (add) => {
      await add();
    }).then(() => committed.push('T2'));
    await Promise.all([t1, t2]);
    await eventually('both messages are published', () => publishedOf(key).length === 2);
    // Published in the order the transactions committed (recorded when each commit returned).
    expect(publishedOf(key)).toEqual(committed);
    if (kind === 'sqlite') {
      // One writer: T1 holds the database from its first write; T2 waits for its COMMIT.
      expect(committed).toEqual(['T1', 'T2']);
    } else {
      // T2 is not held up by T1's open transaction: it commits first and is published first.
      expect(committed).toEqual(['T2', 'T1']);
    }
    return key;
  };

  it('publishes T2 before T1 when T2 commits first (the ambient transaction, default options)', async () => {
    await whyScenario((n, fn) =>
      f.txHost.withTransaction(() =>
        fn(() =>
          f.outbox.add({ type: 'acct.changed', partitionKey: keyOf.current, payload: { n } }),
        ),
      ),
    );
  });

  it('publishes in commit order through an EntityManager of dataSource.transaction() as well', async () => {
    await whyScenario((n, fn) =>
      f.dataSource.transaction((em: EntityManager) =>
        fn(() =>
          f.outbox.add({ type: 'acct.changed', partitionKey: keyOf.current, payload: { n } }, em),
        ),
      ),
    );
  });

  it('drops the keyed messages of a rolled-back savepoint and of a rolled-back transaction', async () => {
    const key = `acct-${randomUUID()}`;
    keyOf.current = key;
    await f.txHost.withTransaction(async () => {
      await f.outbox.add({ type: 'acct.changed', partitionKey: key, payload: { n: 'a' } });
      await f.txHost
        .withTransaction(Propagation.Nested, async () => {
          await f.outbox.add({ type: 'acct.changed', partitionKey: key, payload: { n: 'b' } });
          throw new Error('inner rolled back');
        })
        .catch(() => undefined);
      await f.outbox.add({ type: 'acct.changed', partitionKey: key, payload: { n: 'c' } });
    });
    await f.txHost
      .withTransaction(async () => {
        await f.outbox.add({ type: 'acct.changed', partitionKey: key, payload: { n: 'd' } });
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    await f.txHost.withTransaction(() =>
      f.outbox.add({ type: 'acct.changed', partitionKey: key, payload: { n: 'e' } }),
    );
    await eventually('a, c and e are published', () => publishedOf(key).length >= 3);
    await sleep(300);
    expect(publishedOf(key)).toEqual(['a', 'c', 'e']);
  });

  it('a duplicate id among keyed messages fails the commit and leaves nothing written', async () => {
    const key = `acct-${randomUUID()}`;
    const id = randomUUID();
    await f.txHost.withTransaction(() =>
      f.outbox.add({ id, type: 'acct.changed', partitionKey: key, payload: { n: 'first' } }),
    );
    const keyless = randomUUID();
    await expect(
      f.txHost.withTransaction(async () => {
        await f.outbox.add({ id: keyless, type: 'acct.other', payload: { n: 'keyless' } });
        await f.outbox.add({ id, type: 'acct.changed', partitionKey: key, payload: { n: 'dup' } });
      }),
    ).rejects.toThrow();
    expect(await f.admin.get(keyless)).toBeFalsy();
    await eventually('the first is published', () => publishedOf(key).length === 1);
    expect(publishedOf(key)).toEqual(['first']);
  });

  it('a delayed message is not published before its time, and holds back the later messages of its key', async () => {
    const key = `acct-${randomUUID()}`;
    const free = randomUUID();
    const t0 = Date.now();
    await f.txHost.withTransaction(async () => {
      await f.outbox.add({
        type: 'acct.changed',
        partitionKey: key,
        payload: { n: 'delayed' },
        delay: 2000,
      });
    });
    await f.txHost.withTransaction(async () => {
      await f.outbox.add({ type: 'acct.changed', partitionKey: key, payload: { n: 'after' } });
      await f.outbox.add({ id: free, type: 'acct.keyless', payload: { n: 'keyless' } });
    });
    // The keyless message goes at once; the key's two wait for the delayed one.
    await eventually('the keyless message is published', () =>
      publisher.publishedIds().includes(free),
    );
    const early = publishedOf(key);
    const checkedAt = Date.now();
    if (checkedAt - t0 < 1900) expect(early).toEqual([]);
    await eventually('both keyed messages are published', () => publishedOf(key).length === 2);
    expect(publishedOf(key)).toEqual(['delayed', 'after']);
    const delayed = publisher.calls.find(
      (c) => c.ok && c.message.partitionKey === key && (c.message.payload as any).n === 'delayed',
    )!;
    // Not early: published no sooner than 2 s after the add (the add ran after t0).
    expect(delayed.at - t0).toBeGreaterThanOrEqual(2000 - 50);
  });

  it('availableAt: not published before that time; a keyless delayed message holds nothing back', async () => {
    const late = randomUUID();
    const now = randomUUID();
    const t0 = Date.now();
    await f.txHost.withTransaction(() =>
      f.outbox.add([
        {
          id: late,
          type: 'acct.keyless',
          payload: { n: 'late' },
          availableAt: new Date(t0 + 1500),
        },
        { id: now, type: 'acct.keyless', payload: { n: 'now' } },
      ]),
    );
    await eventually('the undelayed one is published', () =>
      publisher.publishedIds().includes(now),
    );
    await eventually('the delayed one is published', () => publisher.publishedIds().includes(late));
    const at = publisher.calls.find((c) => c.ok && c.message.id === late)!.at;
    expect(at - t0).toBeGreaterThanOrEqual(1500 - 50);
  });

  it('refuses a bad delay with a clear error and writes nothing', async () => {
    const ok = randomUUID();
    for (const bad of [
      { delay: -1 },
      { delay: Number.NaN },
      { delay: 1000, availableAt: new Date() },
      { availableAt: new Date('nope') },
      { delay: 400 * 24 * 3600 * 1000 },
    ]) {
      await expect(
        f.txHost.withTransaction(() =>
          f.outbox.add([
            { id: ok, type: 'acct.keyless', payload: {} },
            { type: 'acct.keyless', payload: {}, ...(bad as object) },
          ]),
        ),
      ).rejects.toThrow(InvalidOutboxEventError);
    }
    expect(await f.admin.get(ok)).toBeFalsy();
  });
});

/** The key of the running scenario (whyScenario sets it through `keyOf.current`). */
const keyOf = { current: '' };
