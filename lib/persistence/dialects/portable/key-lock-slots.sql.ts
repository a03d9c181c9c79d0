import { OUTBOX_KEY_LOCK_SLOTS } from '../contracts/schema.contract';
import type { SqlExecutor } from '../../sql-executor';

/**
 * Inserts the key-lock slots the table `T` lacks (the migration inserts them all; a table created
 * by TypeORM's `synchronize` from the entity is empty, and a slot without its row would lock
 * nothing). The same text on every database: slot numbers are literals. Another process filling
 * them at the same moment may insert a slot first: its duplicate-key error is ignored here and
 * the count read again.
 */
export async function fillKeyLockSlots(exec: SqlExecutor, T: string): Promise<void> {
  for (let round = 0; round < 3; round++) {
    const { rows } = await exec(`SELECT slot FROM ${T}`);
    const present = new Set(rows.map((r) => Number(r.slot)));
    const missing: number[] = [];
    for (let s = 0; s < OUTBOX_KEY_LOCK_SLOTS; s++) if (!present.has(s)) missing.push(s);
    if (!missing.length) return;
    try {
      for (let i = 0; i < missing.length; i += 500) {
        const values = missing.slice(i, i + 500).map((s) => `(${s}, 0)`);
        await exec(`INSERT INTO ${T} (slot, n) VALUES ${values.join(', ')}`);
      }
      return;
    } catch (e) {
      if (round === 2) throw e;
    }
  }
}
