import { ClsServiceManager } from 'nestjs-cls';
import type { DataSource, EntitySubscriberInterface } from 'typeorm';
import {
  installPgRoundTrips,
  withHeldBegin,
} from '../../lib/persistence/dialects/postgres/round-trips';
import { executorFor, type SqlExecutor } from '../../lib/persistence/sql-executor';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
  withPool,
} from '../support/databases';

const INSERT = 'INSERT INTO rt_items (id) VALUES ($1) RETURNING id';
/** Another statement text: prepared separately on the connection. */
const LAST = 'INSERT INTO rt_items (id) VALUES ($1) RETURNING id AS last_id';

/**
 * The gate's transaction on PostgreSQL in three round trips (dialects/postgres/round-trips.ts):
 * START TRANSACTION goes with the first prepared statement, COMMIT with the last one, and a
 * failing last statement makes the server skip that COMMIT. Proven on a real server, with the
 * round trips counted on the pg clients (one `query` call is one round trip: node-postgres sends
 * the next only after the previous one's ReadyForQuery) and every commit seen from another
 * connection at the moment it must (or must not) have happened.
 */
describe.each(databaseKinds())('The gate transaction round trips on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let observer: DataSource;
  let roundTrips = 0;
  let unpatch: (() => void) | undefined;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    observer = await openDataSource(db.url);
    if (kind !== 'postgres') return;
    // One pooled connection: every transaction below runs on the same one.
    ds = await openDataSource(withPool(db.url, 1));
    await observer.query('CREATE TABLE rt_items (id int PRIMARY KEY)');
    const pool = (ds.driver as any).master;
    const Client = (ds.driver as any).postgres.Client;
    const query = Client.prototype.query;
    Client.prototype.query = function (this: unknown, ...args: unknown[]) {
      if (pool._clients.includes(this)) roundTrips++;
      return query.apply(this, args);
    };
    unpatch = () => (Client.prototype.query = query);
    expect(installPgRoundTrips(ds)).toBe(true);
  });

  afterAll(async () => {
    unpatch?.();
    await ds?.destroy();
    await observer?.destroy();
    await db?.drop();
  });

  if (kind !== 'postgres') {
    it('keeps START TRANSACTION and COMMIT as statements of their own', async () => {
      expect(installPgRoundTrips(observer)).toBe(false);
    });
    return;
  }

  const visible = async (id: number) =>
    (await observer.query('SELECT 1 FROM rt_items WHERE id = $1', [id])).length === 1;

  /**
   * A gate-like transaction: `body` gets the transaction's executor; round trips counted. In a
   * CLS context of its own, as the gate's request has one (the arming lives there).
   */
  async function gateTransaction(body: (exec: SqlExecutor) => Promise<void>): Promise<number> {
    const before = roundTrips;
    await ClsServiceManager.getClsService().run(() =>
      withHeldBegin(ds, () => ds.transaction((m) => body(executorFor(m)))),
    );
    return roundTrips - before;
  }

  const insert = (exec: SqlExecutor, id: number, last = false) =>
    exec(last ? LAST : INSERT, [id], { prepare: true, last });

  it("a connection's first use prepares the statements as usual (five round trips)", async () => {
    const trips = await gateTransaction(async (exec) => {
      await insert(exec, 1);
      await exec('INSERT INTO rt_items (id) VALUES ($1)', [2]);
      await insert(exec, 3, true);
      // The usual path: nothing committed before the transaction's own COMMIT.
      expect(await visible(3)).toBe(false);
    });
    expect(trips).toBe(5);
    expect([await visible(1), await visible(2), await visible(3)]).toEqual([true, true, true]);
  });

  it('then: START TRANSACTION with the first statement, COMMIT with the last (three round trips)', async () => {
    const trips = await gateTransaction(async (exec) => {
      await insert(exec, 11);
      await exec('INSERT INTO rt_items (id) VALUES ($1)', [12]);
      expect(await visible(11)).toBe(false); // in the transaction, not on its own
      await insert(exec, 13, true);
      // The COMMIT went with the last statement: committed before TypeORM's commit is called.
      expect(await visible(13)).toBe(true);
    });
    expect(trips).toBe(3);
    expect([await visible(11), await visible(12), await visible(13)]).toEqual([true, true, true]);
  });

  it('a last statement that fails makes the server skip its COMMIT: everything rolls back', async () => {
    let failure: unknown;
    const trips = await gateTransaction(async (exec) => {
      await insert(exec, 21);
      await exec('INSERT INTO rt_items (id) VALUES ($1)', [22]);
      // id 21 exists in this transaction: unique violation, the COMMIT behind it is skipped.
      failure = await exec(LAST, [21], { prepare: true, last: true }).catch((e: unknown) => e);
      throw failure;
    }).catch((e: unknown) => {
      expect(e).toBe(failure);
      return -1;
    });
    expect(trips).toBe(-1);
    expect((failure as any).driverError?.code).toBe('23505');
    expect([await visible(21), await visible(22)]).toEqual([false, false]);
    // The connection is healthy and the next transaction coalesces again.
    const next = await gateTransaction(async (exec) => {
      await insert(exec, 23);
      await insert(exec, 24, true);
    });
    expect(next).toBe(2);
    expect([await visible(23), await visible(24)]).toEqual([true, true]);
  });

  it('a value the client cannot bind sends no COMMIT: the transaction rolls back', async () => {
    const unbindable = {
      toPostgres: () => {
        throw new Error('cannot bind');
      },
    };
    // A statement of its own (pg closes a statement whose Bind failed), prepared once first.
    const UNBOUND = 'INSERT INTO rt_items (id) VALUES ($1) RETURNING id AS unbound_id';
    await gateTransaction(async (exec) => {
      await insert(exec, 30);
      await exec(UNBOUND, [32], { prepare: true, last: true });
    });
    const error = await gateTransaction(async (exec) => {
      await insert(exec, 31);
      await exec(UNBOUND, [unbindable], { prepare: true, last: true });
    }).catch((e: unknown) => e);
    expect(String(error)).toMatch(/cannot bind/);
    expect(await visible(31)).toBe(false);
  });

  it('a statement of the handler while START TRANSACTION is held back sends it first, in the transaction', async () => {
    const error = await gateTransaction(async (exec) => {
      await exec('INSERT INTO rt_items (id) VALUES ($1)', [41]);
      throw new Error('handler failed');
    }).catch((e: unknown) => e);
    expect(String(error)).toMatch(/handler failed/);
    expect(await visible(41)).toBe(false);
  });

  it('a transaction that runs no statement sends neither START TRANSACTION nor COMMIT', async () => {
    expect(await gateTransaction(async () => undefined)).toBe(0);
  });

  it('only the armed transaction is held back: another transaction sends its own', async () => {
    const before = roundTrips;
    await ds.transaction(async (m) => {
      await executorFor(m)(INSERT, [51], { prepare: true, last: true });
      expect(await visible(51)).toBe(false);
    });
    expect(roundTrips - before).toBe(3);
    expect(await visible(51)).toBe(true);
  });

  it('outside a CLS context nothing is held back: the usual round trips', async () => {
    // Warm: both statements prepared on every pooled connection this test may get.
    await gateTransaction(async (exec) => {
      await insert(exec, 71);
      await insert(exec, 72, true);
    });
    const before = roundTrips;
    await withHeldBegin(ds, () =>
      ds.transaction(async (m) => {
        await insert(executorFor(m), 73);
        await insert(executorFor(m), 74, true);
        expect(await visible(74)).toBe(false);
      }),
    );
    expect(roundTrips - before).toBe(4);
    expect([await visible(73), await visible(74)]).toEqual([true, true]);
  });

  it('a beforeTransactionCommit subscriber keeps COMMIT for itself (it runs before the commit)', async () => {
    const seen: boolean[] = [];
    const subscriber: EntitySubscriberInterface = {
      beforeTransactionCommit: async () => {
        seen.push(await visible(62));
      },
    };
    ds.subscribers.push(subscriber);
    try {
      const trips = await gateTransaction(async (exec) => {
        await insert(exec, 61);
        await insert(exec, 62, true);
        expect(await visible(62)).toBe(false);
      });
      expect(trips).toBe(3); // START TRANSACTION still goes with the first statement
    } finally {
      ds.subscribers.splice(ds.subscribers.indexOf(subscriber), 1);
    }
    expect(seen).toEqual([false]);
    expect(await visible(62)).toBe(true);
  });
});
