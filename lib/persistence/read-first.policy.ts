/**
 * When a request or a delivery should first look its record up with one read outside any
 * transaction, instead of opening the transaction and claiming at once.
 *
 * A first execution is cheapest when it claims at once (the reservation or inbox claim is the
 * first statement of its transaction); a repeat (an HTTP replay, a broker redelivery) is cheapest
 * as one read, with no transaction at all. Which of the two a subject (an endpoint, a consumer)
 * mostly sees changes with time: almost only first executions in normal traffic, mostly repeats
 * while clients retry after an outage or a broker redelivers a backlog. The policy keeps, per
 * subject, a moving average of the share of calls that a committed, settled record answered, and
 * asks for the read while that share is above one half. A read that finds nothing costs one
 * statement and the call goes on as usual; correctness never depends on the policy.
 *
 * Subjects are the gate's resolved endpoint options and the inbox's consumer names: a set fixed
 * by the application's code, so the map does not grow with traffic.
 * @internal
 */
export class ReadFirstPolicy {
  private readonly share = new Map<unknown, number>();

  /**
   * @param weight weight of the newest observation in the moving average (1/32: about the last
   *   32 calls of the subject decide)
   * @param threshold read first while the share of repeats is above this
   */
  constructor(
    private readonly weight = 1 / 32,
    private readonly threshold = 0.5,
  ) {}

  /** Whether the next call of this subject should read its record first. */
  readFirst(subject: unknown): boolean {
    return (this.share.get(subject) ?? 0) > this.threshold;
  }

  /** Records how a call of this subject ended: answered by a settled record (a repeat), or not. */
  observe(subject: unknown, answeredByRecord: boolean): void {
    const previous = this.share.get(subject) ?? 0;
    this.share.set(subject, previous + this.weight * ((answeredByRecord ? 1 : 0) - previous));
  }
}
