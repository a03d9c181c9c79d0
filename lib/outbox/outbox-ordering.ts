import { OUTBOX_KEY_LOCK_SLOTS } from '../persistence/dialects';

/*
 * Commit order per partition key (outbox.ordered, the default).
 *
 * A sequence is handed out when a row is INSERTed, and transactions do not commit in the order
 * they insert: T1 inserts for key K and commits 1.5 s later, T2 inserts for K after T1 and
 * commits at once; by sequence T1's message comes first, by commit T2's. So in an ordered
 * transaction OutboxService.add() validates its messages and returns their ids at once, but
 * inserts the keyed ones in a step run right BEFORE the transaction's COMMIT (after-commit.hook.ts
 * `beforeCommit`), after locking the key-lock slot of each of their keys (OutboxSql.lockKeySlots)
 * until the COMMIT. A second transaction of the key waits in that step only while the first one
 * is between its step and its COMMIT (milliseconds), never while it is merely open. Within a
 * key, sequence order is therefore commit order, and the relay's claim (no older pending row of
 * the key) publishes in that order. On SQLite, one writer at a time holds the database from its
 * first write to its COMMIT: insert order is commit order already and rows are inserted at once.
 */

/**
 * The key-lock slot of a partition key: FNV-1a (32-bit) of its UTF-16 code units, modulo the
 * number of slots. The same in every process and version (changing it would let two processes
 * lock different slots for one key).
 */
export function keyLockSlot(partitionKey: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < partitionKey.length; i++) {
    h ^= partitionKey.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % OUTBOX_KEY_LOCK_SLOTS;
}

/** The distinct slots of the keys, ascending (the order they are locked in). */
export function keyLockSlots(partitionKeys: Iterable<string>): number[] {
  const slots = new Set<number>();
  for (const key of partitionKeys) slots.add(keyLockSlot(key));
  return [...slots].sort((a, b) => a - b);
}
