import type { DatabaseService } from '../persistence/database.service';
import type { IdempotencyLedger, Reservation } from '../persistence/idempotency-ledger';

/**
 * Keeps a leased-mode reservation alive while its handler runs: every third of the lease it
 * extends the lease to a full `leaseMs` from now (on the database clock, in a statement of its
 * own outside the handler's transaction). A live process therefore never loses its key to a
 * retry however long its handler takes; a process that dies stops renewing, and its lease lapses
 * `leaseMs` after the last renewal, when one retry takes the key over. Stops by itself when the
 * record is no longer ours (completed, released, taken over). A renewal that fails (a database
 * hiccup, a pool wait) is reported and tried again at the next third: two can fail in a row before
 * the lease of a live request lapses. Renewals start a third of the lease apart whatever each
 * statement takes (one at a time), so slow statements shorten the margin by their own latency only.
 * @internal
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly renew: () => Promise<boolean>,
    private readonly leaseMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): this {
    this.schedule();
    return this;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Next renewal a third of the lease after the previous one STARTED (at once if it took longer). */
  private schedule(previousStart = Date.now()): void {
    if (this.stopped) return;
    const due = previousStart + Math.floor(this.leaseMs / 3) - Date.now();
    this.timer = setTimeout(() => void this.tick(), Math.max(1, due));
    this.timer.unref?.();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const started = Date.now();
    let ours = true;
    try {
      ours = await this.renew();
    } catch (e) {
      this.onError(e);
    }
    // Measured from the start: a slow renewal statement (seen: 0.4-0.7 s on a loaded Babelfish)
    // does not push the next one back by its own duration.
    if (ours) this.schedule(started);
  }
}

/**
 * Renews a committed reservation's lease of `leaseMs` while its handler runs (see LeaseKeeper),
 * reporting a failed renewal to `onError`. None on SQLite (one writer): one process, where the
 * in-flight registry already answers every duplicate, and where a statement outside the handler's
 * transaction would wait for it.
 * @internal
 */
export function keepLeaseAlive(
  ledger: IdempotencyLedger,
  db: DatabaseService,
  reservation: Reservation,
  leaseMs: number,
  onError: (error: unknown) => void,
): LeaseKeeper | undefined {
  if (ledger.singleWriter) return undefined;
  // Opened now (at the first leased request) so that the first renewal, a third of the lease
  // from now, does not wait for a new connection.
  db.leaseRenewals.warm();
  const ms = Math.floor(leaseMs);
  return new LeaseKeeper(() => ledger.renew(reservation, ms), ms, onError).start();
}
