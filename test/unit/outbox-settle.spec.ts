import { markSentWithRetries, settleWithRetries } from '../../lib/outbox/outbox-settle';
import type { OutboxStore } from '../../lib/outbox/outbox.store';
import type { OutboxRow } from '../../lib/persistence/dialects';

/** A deadlock victim as node-postgres reports it. */
const deadlock = () => Object.assign(new Error('deadlock detected'), { code: '40P01' });
/** The connection lost after the server committed: the relay cannot tell. */
const lost = () => new Error('Connection terminated unexpectedly');

const row = (seq: string, status: OutboxRow['status'], leaseOwner: string | null) =>
  ({ seq, id: `id-${seq}`, status, leaseOwner }) as OutboxRow;

describe('settleWithRetries (a batch outcome written again)', () => {
  it('runs the statement again after a deadlock, and tells each retried error', async () => {
    const told: number[] = [];
    let calls = 0;
    const out = await settleWithRetries(
      async () => {
        if (++calls < 3) throw deadlock();
        return 'done';
      },
      (_, attempt) => told.push(attempt),
    );
    expect(out).toBe('done');
    expect(calls).toBe(3);
    expect(told).toEqual([1, 2]);
  });

  it('does not run a statement again after an error that is not the database being unavailable', async () => {
    let calls = 0;
    const syntax = Object.assign(new Error('syntax error'), { code: '42601' });
    await expect(
      settleWithRetries(
        async () => {
          calls++;
          throw syntax;
        },
        () => undefined,
      ),
    ).rejects.toBe(syntax);
    expect(calls).toBe(1);
  });

  it('gives up after 6 attempts and rethrows the last error', async () => {
    let calls = 0;
    await expect(
      settleWithRetries(
        async () => {
          calls++;
          throw deadlock();
        },
        () => undefined,
      ),
    ).rejects.toMatchObject({ code: '40P01' });
    expect(calls).toBe(6);
  }, 10_000);
});

describe('markSentWithRetries', () => {
  const batch = [row('1', 'pending', 'r#1'), row('2', 'pending', 'r#1')];

  it('counts the rows marked under the owner when an attempt committed before its error arrived', async () => {
    let calls = 0;
    const store = {
      markSent: async () => {
        calls++;
        if (calls === 1) throw lost(); // the rows were marked: the next attempt finds none left
        return 0;
      },
      findByIds: async () => [row('1', 'sent', 'r#1'), row('2', 'sent', 'r#1')],
    } as unknown as OutboxStore;
    expect(await markSentWithRetries(store, batch, 'r#1', () => undefined)).toBe(2);
  });

  it('reports a lapsed lease as fewer rows marked (another relay owns the rest)', async () => {
    let calls = 0;
    const store = {
      markSent: async () => {
        if (++calls === 1) throw deadlock();
        return 1;
      },
      findByIds: async () => [row('1', 'sent', 'r#1'), row('2', 'pending', 'r2#7')],
    } as unknown as OutboxStore;
    expect(await markSentWithRetries(store, batch, 'r#1', () => undefined)).toBe(1);
  });

  it('reads nothing back when the first attempt marked every row', async () => {
    const store = {
      markSent: async () => 2,
      findByIds: async () => {
        throw new Error('not read');
      },
    } as unknown as OutboxStore;
    expect(await markSentWithRetries(store, batch, 'r#1', () => undefined)).toBe(2);
  });
});
