import type { QueryRunner } from 'typeorm';

const pending = new WeakMap<QueryRunner, Array<() => void>>();

type Hooked = 'commitTransaction' | 'rollbackTransaction' | 'release';

/**
 * Calls `fn` once the OUTERMOST transaction of `runner` has committed, and never when it rolls
 * back. nestjs-cls' transactional plugin has no commit hook, and TypeORM's
 * `afterTransactionCommit` subscribers are DataSource-wide (they also fire when a savepoint is
 * released); what is per transaction is its QueryRunner (`TransactionHost.tx.queryRunner`, or
 * the manager given by `dataSource.transaction()`). So the runner's own `commitTransaction`,
 * `rollbackTransaction` and `release` are wrapped for the life of this one transaction:
 * - after a commit that leaves no transaction active (not a nested savepoint release), the
 *   callbacks run and the wrappers are removed;
 * - after a rollback that leaves no transaction active, or a release, the wrappers are removed
 *   and the callbacks dropped;
 * - a savepoint rolled back inside keeps them: the outer commit then fires a wake-up that finds
 *   nothing (harmless).
 * The first call for a runner installs the wrappers; later calls only add callbacks.
 * @internal
 */
export function afterCommit(runner: QueryRunner, fn: () => void): void {
  const callbacks = pending.get(runner);
  if (callbacks) {
    callbacks.push(fn);
    return;
  }
  const queued = [fn];
  pending.set(runner, queued);
  const target = runner as unknown as Record<Hooked, (...args: unknown[]) => Promise<unknown>>;
  const names: Hooked[] = ['commitTransaction', 'rollbackTransaction', 'release'];
  const saved = names.map((name) => ({
    name,
    own: Object.prototype.hasOwnProperty.call(target, name),
    fn: target[name],
  }));
  const original = (name: Hooked) => saved.find((s) => s.name === name)!.fn;
  const restore = () => {
    if (pending.get(runner) !== queued) return;
    pending.delete(runner);
    // In the reverse order of their addition: V8 keeps an object fast when the property deleted
    // is the last one added, and turns it into a slow dictionary-mode one otherwise.
    for (const s of [...saved].reverse()) {
      if (s.own) target[s.name] = s.fn;
      else delete (target as Partial<typeof target>)[s.name];
    }
  };
  target.commitTransaction = async function (this: unknown, ...args: unknown[]) {
    const result = await original('commitTransaction').apply(this, args);
    if (!runner.isTransactionActive) {
      restore();
      for (const cb of queued) {
        try {
          cb();
        } catch {
          // a callback's failure must not turn a committed transaction into an error
        }
      }
    }
    return result;
  };
  target.rollbackTransaction = async function (this: unknown, ...args: unknown[]) {
    try {
      return await original('rollbackTransaction').apply(this, args);
    } finally {
      if (!runner.isTransactionActive) restore();
    }
  };
  target.release = async function (this: unknown, ...args: unknown[]) {
    restore();
    return original('release').apply(this, args);
  };
}
