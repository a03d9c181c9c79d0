import { AsyncLocalStorage } from 'node:async_hooks';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

const INSTALLED = Symbol('nestjs-exactly-once:sqlite-serializer');

/**
 * SQLite has one writer and TypeORM drives it through ONE connection shared by every query
 * runner. Left alone, concurrent requests run inside each other's transactions: B's insert
 * lands in A's open transaction and A's rollback erases it; reads outside both see A's
 * uncommitted rows. The serializer gives every caller its own query runner view of the shared
 * connection and lets one transaction at a time own it: a transaction holds an in-process
 * lock from BEGIN to COMMIT/ROLLBACK, and any statement outside that transaction waits for it.
 * A statement issued from inside the owning transaction's callback (e.g. through a repository
 * that does not join the transaction) runs on the owner instead of deadlocking.
 */
export class SqliteSerializer {
  private tail: Promise<void> = Promise.resolve();
  private owner: QueryRunner | undefined;
  private releaseOwner: (() => void) | undefined;
  private readonly context = new AsyncLocalStorage<QueryRunner>();

  /** Installs the serializer on a better-sqlite3/sqlite DataSource (idempotent). */
  static install(dataSource: DataSource): SqliteSerializer {
    const ds = dataSource as any;
    if (ds[INSTALLED]) return ds[INSTALLED];
    const serializer = new SqliteSerializer();
    ds[INSTALLED] = serializer;
    const driver = ds.driver;
    const shared: QueryRunner = driver.createQueryRunner('master');
    driver.createQueryRunner = () => serializer.view(shared);
    const manager: EntityManager = dataSource.manager;
    const transaction = manager.transaction.bind(manager) as (...args: any[]) => Promise<unknown>;
    (manager as any).transaction = (...args: any[]) => {
      const fn = args[args.length - 1] as (em: EntityManager) => Promise<unknown>;
      args[args.length - 1] = (em: EntityManager) =>
        serializer.context.run(em.queryRunner!, () => fn(em));
      return transaction(...args);
    };
    return serializer;
  }

  /** Waits for the lock; resolves with its release function. FIFO. */
  private acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const previous = this.tail;
    this.tail = previous.then(() => held);
    return previous.then(() => release);
  }

  /** A query runner that shares the one connection but has its own transaction state. */
  private view(shared: QueryRunner): QueryRunner {
    const self = this;
    const runner: any = Object.create(shared);
    runner.isTransactionActive = false;
    runner.transactionDepth = 0;
    runner.isReleased = false;
    const proto = shared as any;
    runner.startTransaction = async function (isolationLevel?: unknown) {
      if (self.owner === runner) return proto.startTransaction.call(runner, isolationLevel);
      const release = await self.acquire();
      self.owner = runner;
      self.releaseOwner = release;
      try {
        await proto.startTransaction.call(runner, isolationLevel);
      } catch (e) {
        self.free(runner);
        throw e;
      }
    };
    const finish = (method: 'commitTransaction' | 'rollbackTransaction') =>
      async function () {
        try {
          await proto[method].call(runner);
        } finally {
          if (!runner.isTransactionActive) self.free(runner);
        }
      };
    runner.commitTransaction = finish('commitTransaction');
    runner.rollbackTransaction = finish('rollbackTransaction');
    runner.query = async function (...args: unknown[]) {
      if (self.owner === runner) return proto.query.apply(runner, args);
      const ctx = self.context.getStore();
      if (ctx && ctx === self.owner) return proto.query.apply(ctx, args);
      const release = await self.acquire();
      try {
        return await proto.query.apply(runner, args);
      } finally {
        release();
      }
    };
    return runner as QueryRunner;
  }

  private free(runner: QueryRunner): void {
    if (this.owner !== runner) return;
    const release = this.releaseOwner;
    this.owner = undefined;
    this.releaseOwner = undefined;
    release?.();
  }
}
