import type { QueryRunner } from 'typeorm';

/** A step run right before a transaction's COMMIT, with the items added for it. */
export type BeforeCommitStep<T> = (items: T[]) => Promise<void>;

/** What one transaction of a runner has registered. */
interface Hooks {
  after: Array<() => void>;
  /** Per step: its items, each with the transaction depth (savepoint level) it was added at. */
  before: Map<BeforeCommitStep<any>, Array<{ depth: number; item: unknown }>>;
}

const pending = new WeakMap<QueryRunner, Hooks>();

type Hooked = 'commitTransaction' | 'rollbackTransaction' | 'release';

/** TypeORM's savepoint level of the runner (1: the outermost transaction; 0: none). */
const depthOf = (runner: QueryRunner): number =>
  Number((runner as unknown as { transactionDepth?: number }).transactionDepth ?? 1);

/**
 * Runs `step` with `item` (and every other item given for the same step in this transaction)
 * right BEFORE the outermost COMMIT of `runner`'s transaction, on that runner, inside the
 * transaction: what it writes commits with it, and when it throws, the commit throws before any
 * COMMIT was sent (the caller rolls back: TypeORM's `transaction()`, nestjs-cls). An item added
 * inside a savepoint that is rolled back is dropped with it. Never runs when the transaction
 * rolls back. Same wrappers as {@link afterCommit}.
 * @internal
 */
export function beforeCommit<T>(runner: QueryRunner, step: BeforeCommitStep<T>, item: T): void {
  const hooks = hooksOf(runner);
  const items = hooks.before.get(step) ?? [];
  items.push({ depth: depthOf(runner), item });
  hooks.before.set(step, items);
}

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
  hooksOf(runner).after.push(fn);
}

/** The hooks of the runner's current transaction; the first call installs the wrappers. */
function hooksOf(runner: QueryRunner): Hooks {
  const existing = pending.get(runner);
  if (existing) return existing;
  const hooks: Hooks = { after: [], before: new Map() };
  pending.set(runner, hooks);
  const target = runner as unknown as Record<Hooked, (...args: unknown[]) => Promise<unknown>>;
  const names: Hooked[] = ['commitTransaction', 'rollbackTransaction', 'release'];
  const saved = names.map((name) => ({
    name,
    own: Object.prototype.hasOwnProperty.call(target, name),
    fn: target[name],
  }));
  const original = (name: Hooked) => saved.find((s) => s.name === name)!.fn;
  const restore = () => {
    if (pending.get(runner) !== hooks) return;
    pending.delete(runner);
    // In the reverse order of their addition: V8 keeps an object fast when the property deleted
    // is the last one added, and turns it into a slow dictionary-mode one otherwise.
    for (const s of [...saved].reverse()) {
      if (s.own) target[s.name] = s.fn;
      else delete (target as Partial<typeof target>)[s.name];
    }
  };
  target.commitTransaction = async function (this: unknown, ...args: unknown[]) {
    // The outermost commit (not a savepoint's release): the before-commit steps run first, once.
    if (runner.isTransactionActive && depthOf(runner) <= 1 && hooks.before.size) {
      const steps = [...hooks.before];
      hooks.before.clear();
      for (const [step, items] of steps) await step(items.map((i) => i.item));
    }
    const result = await original('commitTransaction').apply(this, args);
    if (!runner.isTransactionActive) {
      restore();
      for (const cb of hooks.after) {
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
    // A savepoint rolled back (depth d > 1): what was added inside it (at depth >= d) goes too.
    const depth = depthOf(runner);
    for (const [step, items] of hooks.before) {
      const kept = items.filter((i) => i.depth < depth);
      if (kept.length) hooks.before.set(step, kept);
      else hooks.before.delete(step);
    }
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
  return hooks;
}
