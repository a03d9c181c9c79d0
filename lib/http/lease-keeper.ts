/**
 * Keeps a leased-mode reservation alive while its handler runs: every third of the lease it
 * extends the lease to a full `leaseMs` from now (on the database clock, in a statement of its
 * own outside the handler's transaction). A live process therefore never loses its key to a
 * retry however long its handler takes; a process that dies stops renewing, and its lease lapses
 * `leaseMs` after the last renewal, when one retry takes the key over. Stops by itself when the
 * record is no longer ours (completed, released, taken over) or a renewal fails.
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

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), Math.max(1, Math.floor(this.leaseMs / 3)));
    this.timer.unref?.();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    let ours = false;
    try {
      ours = await this.renew();
    } catch (e) {
      this.onError(e);
      return;
    }
    if (ours) this.schedule();
  }
}
