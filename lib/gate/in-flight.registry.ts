/**
 * The guarded requests in flight in this process, by (scope, key).
 *
 * On SQLite (one writer, one connection) a duplicate cannot meet the first request's uncommitted
 * reservation in the database: every statement waits for the transaction in progress. The
 * registry stands in for the row lock there: a duplicate of a key registered here answers 409 at
 * once. It also keeps the lease deadline of leased-mode requests, because such a duplicate cannot
 * read the record to learn it. Replays never register, so concurrent replays of a completed key
 * are never refused. On other databases `enabled()` is false and nothing registers.
 * @internal
 */
export class InFlightRegistry {
  private readonly tickets = new Map<string, symbol>();
  private readonly leases = new Map<string, number>();

  constructor(private readonly enabled: () => boolean) {}

  /** Whether another request holding a reservation for (scope, key) runs in this process. */
  has(scope: string, key: string): boolean {
    return this.enabled() && this.tickets.has(id(scope, key));
  }

  /** Registers the request that has just reserved (scope, key); returns its ticket. */
  enter(scope: string, key: string): symbol | undefined {
    if (!this.enabled()) return undefined;
    const ticket = Symbol('in-flight');
    this.tickets.set(id(scope, key), ticket);
    return ticket;
  }

  /** Leased mode: when the lease of the request registered for (scope, key) runs out. */
  setLease(scope: string, key: string, until: number): void {
    this.leases.set(id(scope, key), until);
  }

  /** Milliseconds left on that lease, or undefined when none is known. */
  leaseRemainingMs(scope: string, key: string): number | undefined {
    const until = this.leases.get(id(scope, key));
    return until === undefined ? undefined : until - Date.now();
  }

  /** Removes the registration (if it is still this request's) and the lease deadline. */
  leave(scope: string, key: string, ticket: symbol | undefined): void {
    const k = id(scope, key);
    this.leases.delete(k);
    if (ticket && this.tickets.get(k) === ticket) this.tickets.delete(k);
  }
}

const id = (scope: string, key: string) => `${scope}\u0000${key}`;
