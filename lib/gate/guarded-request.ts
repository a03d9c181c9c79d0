import type { ResolvedEndpointOptions } from '../idempotency.options';
import type { GateTrace } from '../observability/gate.tracing';
import type { LedgerRequest } from '../persistence/idempotency-ledger';
import type { IdempotencyInfo } from './idempotency-context';
import type { ReplayHeaders } from './idempotency-exception.filter';

/** One guarded request, as the gate sees it once the interceptor has read it. */
export interface GuardedRequest {
  opts: ResolvedEndpointOptions;
  info: IdempotencyInfo;
  /** What the ledger needs of this request (scope, key, fingerprint, mode, times). */
  ledger: LedgerRequest;
  req: any;
  res: any;
  method: string;
  /** The resource the key is scoped to (route template with its parameters filled in). */
  path: string;
  /** The gate's own headers on a replay. */
  replayHeaders: ReplayHeaders;
  /** SQLite: this request's registration in the in-process in-flight registry. */
  inFlightTicket?: symbol;
  /** Status of the first execution's answer, once it is stored. */
  createdStatus?: number;
  /** Under the `wait` in-progress policy: when waiting stops. */
  waitUntil?: number;
  /** The request's span (outcome, mode, key hash): told the answer by GateAnswers. */
  trace?: GateTrace;
}

/**
 * Thrown inside the transaction to roll it back; `after` runs once the rollback is done
 * (send the captured answer, a problem, or store a 4xx). In leased mode the reservation is
 * released unless `keepReservation` says the answer completes it (4xx) or it is no longer ours.
 */
export class Abort extends Error {
  constructor(
    readonly after: () => Promise<void> | void,
    readonly keepReservation = false,
  ) {
    super('rolled back');
  }
}
