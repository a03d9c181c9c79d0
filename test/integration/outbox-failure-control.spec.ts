import { randomUUID } from 'node:crypto';
import { NonRetryableError, OutboxDeadFilterRequiredError } from '../../lib';
import type { OutboxEntry } from '../../lib';
import { DEAD_LETTER_BATCH } from '../../lib/outbox/outbox-admin.service';
import {
  type OutboxFixture,
  RecordingPublisher,
  startOutboxFixture,
} from '../fixtures/outbox/outbox-fixture';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the publisher does with a message: its payload says so. */
interface Behaviour {
  /** `ok`: confirmed; `fail`: an Error; `never`: a NonRetryableError; `refuse`: a RefusedError. */
  mode: 'ok' | 'fail' | 'never' | 'refuse';
  /** Error text (the attempt number is appended). */
  text?: string;
}

class RefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RefusedError';
  }
}

describe.each(databaseKinds())('outbox failure control and dead letters on %s', (kind) => {
  let db: TestDatabase;
  let f: OutboxFixture;
  let publisher: RecordingPublisher;
  const retryIfCalls: Array<{ error: string; id: string }> = [];
  const backoffCalls: Array<{ attempt: number; id: string; error: string }> = [];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    publisher = new RecordingPublisher((m, attempt) => {
      const b = m.payload as Behaviour;
      const text = `${b.text ?? 'failed'} #${attempt}`;
      if (b.mode === 'fail') throw new Error(text);
      if (b.mode === 'never') throw new NonRetryableError(text);
      if (b.mode === 'refuse') throw new RefusedError(text);
    });
    f = await startOutboxFixture({
      dbUrl: db.url,
      outbox: {
        publisher,
        // Passes run by hand (relay.runOnce): no timing in the assertions.
        relayEnabled: false,
        batchSize: 1000,
        maxAttempts: 5,
        maxAttemptsByType: { 'type.twice': 2, 'type.history': 15 },
        retryIf: (error, message) => {
          retryIfCalls.push({ error: error.message, id: message.id });
          return error.name !== 'RefusedError';
        },
        // Due again at once, except 'type.slow' (one hour times the attempt).
        backoff: (attempt, message, error) => {
          backoffCalls.push({ attempt, id: message.id, error: error.message });
          return message.type === 'type.slow' ? 3_600_000 * attempt : 0;
        },
      },
    });
  });

  afterAll(async () => {
    await f?.close();
    await db?.drop();
  });

  async function add(type: string, payload: Behaviour, partitionKey: string | null = null) {
    const id = randomUUID();
    await f.txHost.withTransaction(() => f.outbox.add({ id, type, payload, partitionKey }));
    return id;
  }

  const get = async (id: string): Promise<OutboxEntry> => (await f.admin.get(id))!;

  it('a NonRetryableError makes the message dead after its one attempt, with that attempt in its history', async () => {
    const id = await add('type.any', { mode: 'never', text: 'schema rejected' });
    const r = await f.relay.runOnce();
    expect(r.dead).toBeGreaterThanOrEqual(1);
    const e = await get(id);
    expect(e.status).toBe('dead');
    expect(e.attempts).toBe(1);
    expect(publisher.attemptsOf(id)).toBe(1);
    expect(e.lastError).toBe('schema rejected #1');
    expect(e.failures).toHaveLength(1);
    expect(e.failures[0]).toMatchObject({
      attempt: 1,
      relay: f.relay.relayId,
      error: 'NonRetryableError',
      message: 'schema rejected #1',
    });
    expect(new Date(e.failures[0].at).getTime()).not.toBeNaN();
    expect(e.failedAt).toBeInstanceOf(Date);
    // retryIf is not asked about a NonRetryableError.
    expect(retryIfCalls.find((c) => c.id === id)).toBeUndefined();
    await f.relay.runOnce();
    expect(publisher.attemptsOf(id)).toBe(1);
  });

  it('retryIf: false makes the message dead at once; true lets it retry', async () => {
    const refused = await add('type.any', { mode: 'refuse', text: 'refused' });
    const retried = await add('type.any', { mode: 'fail', text: 'try again' });
    await f.relay.runOnce();
    const a = await get(refused);
    expect(a).toMatchObject({ status: 'dead', attempts: 1 });
    expect(a.failures.map((x) => x.error)).toEqual(['RefusedError']);
    const b = await get(retried);
    expect(b).toMatchObject({ status: 'pending', attempts: 1, lastError: 'try again #1' });
    expect(retryIfCalls).toEqual(
      expect.arrayContaining([
        { error: 'refused #1', id: refused },
        { error: 'try again #1', id: retried },
      ]),
    );
  });

  it('the backoff function sets the next attempt time in the row, and gets (attempt, message, error)', async () => {
    const id = await add('type.slow', { mode: 'fail', text: 'slow' });
    await f.relay.runOnce();
    const e = await get(id);
    expect(e.status).toBe('pending');
    // next_attempt_at = failed_at + backoff(1) = one hour, both on the database clock.
    const delay = e.nextAttemptAt!.getTime() - e.failedAt!.getTime();
    expect(Math.abs(delay - 3_600_000)).toBeLessThan(1000);
    expect(backoffCalls.filter((c) => c.id === id)).toEqual([{ attempt: 1, id, error: 'slow #1' }]);
    // Not due: a pass does not publish it again.
    await f.relay.runOnce();
    expect(publisher.attemptsOf(id)).toBe(1);
  });

  it("max attempts per message type: 'type.twice' is dead after 2, another type still pending", async () => {
    const twice = await add('type.twice', { mode: 'fail' });
    const other = await add('type.other', { mode: 'fail' });
    await f.relay.runOnce();
    await f.relay.runOnce();
    expect(await get(twice)).toMatchObject({ status: 'dead', attempts: 2 });
    expect(await get(other)).toMatchObject({ status: 'pending', attempts: 2 });
    for (let i = 0; i < 3; i++) await f.relay.runOnce();
    // maxAttempts (5) for a type not in the map.
    expect(await get(other)).toMatchObject({ status: 'dead', attempts: 5 });
    expect(publisher.attemptsOf(twice)).toBe(2);
  });

  it('history: the newest 10 attempts are kept, each message cut to 500 characters', async () => {
    const long = 'x'.repeat(2000);
    const id = await add('type.history', { mode: 'fail', text: long });
    for (let i = 0; i < 12; i++) await f.relay.runOnce();
    const e = await get(id);
    expect(e.attempts).toBe(12);
    expect(e.failures.map((x) => x.attempt)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    for (const x of e.failures) {
      expect(x.message).toHaveLength(500);
      expect(x.message.endsWith('…')).toBe(true);
      expect(x.error).toBe('Error');
    }
    // The last error keeps its own bound (2000 characters).
    expect(e.lastError).toHaveLength(2000);
  });

  describe('requeue and purge by filter', () => {
    const tag = randomUUID().slice(0, 8);
    const T = {
      a: `filter.a.${tag}`,
      b: `filter.b.${tag}`,
    };
    let early: string[];
    let late: string[];
    let lateFrom: Date;

    beforeAll(async () => {
      // Early: type a (keys k1, k2) failing with "timeout"; late: type a and b failing with "refused".
      early = [
        await add(T.a, { mode: 'never', text: 'upstream timeout' }, `k1-${tag}`),
        await add(T.a, { mode: 'never', text: 'upstream TIMEOUT' }, `k2-${tag}`),
      ];
      await f.relay.runOnce();
      await sleep(30);
      late = [
        await add(T.a, { mode: 'never', text: 'refused by broker' }, `k1-${tag}`),
        await add(T.b, { mode: 'never', text: 'refused by broker' }, `k1-${tag}`),
        await add(T.b, { mode: 'never', text: 'schema' }, null),
      ];
      // Two of them share key k1: in commit order (the default) the relay takes one message of
      // a key per claim, so the second waits for the next run.
      await f.relay.runOnce();
      await f.relay.runOnce();
      for (const id of [...early, ...late]) expect((await get(id)).status).toBe('dead');
      lateFrom = new Date(
        Math.min(
          ...(await Promise.all(late.map(async (id) => (await get(id)).failedAt!.getTime()))),
        ),
      );
      expect(
        Math.max(
          ...(await Promise.all(early.map(async (id) => (await get(id)).failedAt!.getTime()))),
        ),
      ).toBeLessThan(lateFrom.getTime());
    });

    it('counts what a filter hits, each criterion and their combination', async () => {
      expect(await f.admin.countDead({ type: T.a })).toBe(3);
      expect(await f.admin.countDead({ type: T.b })).toBe(2);
      expect(await f.admin.countDead({ partitionKey: `k1-${tag}` })).toBe(3);
      expect(await f.admin.countDead({ type: T.a, partitionKey: `k1-${tag}` })).toBe(2);
      // Case-insensitive substring of the last error.
      expect(await f.admin.countDead({ type: T.a, errorContains: 'timeout' })).toBe(2);
      expect(await f.admin.countDead({ type: T.a, errorContains: 'TimeOut' })).toBe(2);
      expect(await f.admin.countDead({ type: T.a, failedBefore: lateFrom })).toBe(2);
      expect(await f.admin.countDead({ type: T.a, failedAfter: lateFrom })).toBe(1);
      expect(await f.admin.countDead({ type: `${T.a}-none` })).toBe(0);
    });

    it('refuses a filter with no criterion unless all: true', async () => {
      await expect(f.admin.requeueDead({})).rejects.toBeInstanceOf(OutboxDeadFilterRequiredError);
      await expect(f.admin.purgeDeadWhere({ errorContains: '' })).rejects.toBeInstanceOf(
        OutboxDeadFilterRequiredError,
      );
      expect(await f.admin.countDead({ all: true })).toBe((await f.admin.counts()).dead);
    });

    it('requeues what the filter hits (attempts reset, history kept) and nothing else', async () => {
      const before = await get(early[0]);
      expect(await f.admin.requeueDead({ type: T.a, errorContains: 'timeout' })).toBe(2);
      for (const id of early) {
        const e = await get(id);
        expect(e).toMatchObject({ status: 'pending', attempts: 0, leaseOwner: null });
        expect(e.failures).toHaveLength(1);
        expect(e.failedAt).not.toBeNull();
      }
      expect((await get(early[0])).failures).toEqual(before.failures);
      for (const id of late) expect((await get(id)).status).toBe('dead');
      expect(await f.admin.countDead({ type: T.a, errorContains: 'timeout' })).toBe(0);
      // Requeued: published again on the next pass (this publisher refuses them again: dead again).
      await f.relay.runOnce();
      const again = await get(early[0]);
      expect(again.status).toBe('dead');
      expect(again.failures.map((x) => x.attempt)).toEqual([1, 1]);
    });

    it('purges what the filter hits and nothing else', async () => {
      expect(await f.admin.purgeDeadWhere({ type: T.b, failedAfter: lateFrom })).toBe(2);
      expect(await f.admin.get(late[1])).toBeUndefined();
      expect(await f.admin.get(late[2])).toBeUndefined();
      expect((await get(late[0])).status).toBe('dead');
      expect(await f.admin.countDead({ type: T.a })).toBe(3);
      expect(await f.admin.purgeDeadWhere({ type: T.b })).toBe(0);
    });

    it(`works through more rows than one batch (${DEAD_LETTER_BATCH}) and leaves pending rows alone`, async () => {
      const type = `filter.many.${tag}`;
      const n = DEAD_LETTER_BATCH + 20;
      await f.txHost.withTransaction(() =>
        f.outbox.add(
          Array.from({ length: n }, (_, i) => ({
            type,
            payload: { mode: 'never', text: `bulk ${i}` } satisfies Behaviour,
          })),
        ),
      );
      await f.relay.runOnce();
      expect(await f.admin.countDead({ type })).toBe(n);
      const pendingId = await add(type, { mode: 'fail' });
      expect(await f.admin.requeueDead({ type })).toBe(n);
      expect(await f.admin.countDead({ type })).toBe(0);
      expect(
        (await f.admin.list({ status: 'pending', limit: 1000 })).filter((e) => e.type === type),
      ).toHaveLength(n + 1);
      await f.relay.runOnce();
      expect(await f.admin.countDead({ type })).toBe(n);
      expect(await f.admin.purgeDeadWhere({ type })).toBe(n);
      expect(await f.admin.countDead({ type })).toBe(0);
      const kept = await get(pendingId);
      expect(kept.type).toBe(type);
      expect(kept.status).not.toBe('dead');
    });
  });
});
