import { retryWithJitter } from '../internal/jittered-retry';
import { isDatabaseUnavailable } from '../persistence/database-unavailable';
import type { OutboxRow } from '../persistence/dialects';
import type { OutboxStore } from './outbox.store';

/**
 * How a batch's outcome is written again: 6 attempts in all, waits of 100, 200… 500 ms plus up
 * to 100 ms of jitter (about 1.5 s to 2 s in all).
 * @internal
 */
export const SETTLE_RETRY = { tries: 6, stepMs: 100, jitterMs: 100 } as const;

/**
 * Runs a statement that records what a claimed batch did (mark sent, mark failed, release), and
 * runs it again when the database could not run it for now: a deadlock victim, a lock time-out,
 * a lost connection, a busy SQLite file. A batch that was published but whose mark is lost stays
 * pending under its lease, and another relay publishes it again once the lease lapses; one more
 * attempt a moment later avoids that.
 *
 * Running such a statement again is safe: each one only changes rows that are still pending
 * under this batch's owner. An attempt that committed before its error reached the relay makes
 * the next one change nothing, and an attempt after the lease lapsed changes only the rows no
 * other relay has claimed since. `onRetry` is told each error that is tried again; the last one
 * is rethrown.
 * @internal
 */
export function settleWithRetries<T>(
  statement: () => Promise<T>,
  onRetry: (error: unknown, attempt: number) => void,
): Promise<T> {
  let attempt = 0;
  return retryWithJitter(
    (n) => {
      attempt = n;
      return statement();
    },
    {
      ...SETTLE_RETRY,
      retryable: (e) => {
        const again = isDatabaseUnavailable(e);
        if (again && attempt < SETTLE_RETRY.tries) onRetry(e, attempt);
        return again;
      },
    },
  );
}

/**
 * Marks the published `rows` of a batch sent (with {@link settleWithRetries}); returns how many
 * are marked sent under `owner`. Fewer than `rows` means the lease lapsed and another relay took
 * the rest over. After an attempt was tried again, the rows are counted: one that committed
 * before its error arrived left the next attempt nothing to mark.
 * @internal
 */
export async function markSentWithRetries(
  store: OutboxStore,
  rows: readonly OutboxRow[],
  owner: string,
  onRetry: (error: unknown, attempt: number) => void,
): Promise<number> {
  let retried = false;
  const marked = await settleWithRetries(
    () =>
      store.markSent(
        rows.map((r) => r.seq),
        owner,
      ),
    (error, attempt) => {
      retried = true;
      onRetry(error, attempt);
    },
  );
  if (!retried || marked >= rows.length) return marked;
  const now = await store.findByIds(rows.map((r) => r.id));
  return now.filter((r) => r.status === 'sent' && r.leaseOwner === owner).length;
}
