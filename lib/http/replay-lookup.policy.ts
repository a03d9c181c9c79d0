/**
 * When a transactional-mode request should first look its key up with one read outside any
 * transaction, instead of opening the transaction and reserving at once.
 *
 * A first execution is cheapest when it reserves at once (the reservation is the first statement
 * of its transaction); a replay is cheapest as one read (no transaction at all). Which of the two
 * an endpoint mostly sees changes with time: almost only first executions in normal traffic,
 * mostly replays while clients retry after an outage. The policy keeps, per endpoint, a moving
 * average of the share of requests that a committed, completed record answered, and asks for the
 * look-up while that share is above one half. A look-up that finds nothing costs one read and the
 * request goes on as usual; correctness never depends on the policy.
 * @internal
 */
export class ReplayLookupPolicy {
  private readonly share = new WeakMap<object, number>();

  /**
   * @param weight weight of the newest observation in the moving average (1/32: about the last
   *   32 requests of the endpoint decide)
   * @param threshold look up first while the share of replays is above this
   */
  constructor(
    private readonly weight = 1 / 32,
    private readonly threshold = 0.5,
  ) {}

  /** Whether the next request of this endpoint should look its key up first. */
  lookUpFirst(endpoint: object): boolean {
    return (this.share.get(endpoint) ?? 0) > this.threshold;
  }

  /** Records how a request of this endpoint ended: answered by a completed record, or not. */
  observe(endpoint: object, answeredByRecord: boolean): void {
    const previous = this.share.get(endpoint) ?? 0;
    this.share.set(endpoint, previous + this.weight * ((answeredByRecord ? 1 : 0) - previous));
  }
}
