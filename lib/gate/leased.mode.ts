import type { CallHandler } from '@nestjs/common';
import type { Subscriber } from 'rxjs';
import {
  gateAfterCommit,
  gateAfterReservationCommit,
  publishGate,
} from '../diagnostics/diagnostics.channels';
import type { LedgerDecision } from '../persistence/idempotency-ledger';
import { errorText } from './gate-answers';
import { Abort, type GuardedRequest } from './guarded-request';
import { rawResponse } from '../internal/http-platform';
import { keepLeaseAlive } from './lease-keeper';
import { ResponseCapture } from './response-capture';
import { GateMode } from './gate.mode';

/**
 * Leased mode: the reservation is committed first with a lease (renewed while the handler runs),
 * then the handler and the completion run in a second transaction. For long handlers and
 * handlers with effects outside the database: a retry meets the committed `started` record.
 * @internal
 */
export class LeasedMode extends GateMode {
  override async run(
    g: GuardedRequest,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
  ): Promise<void> {
    let decision: LedgerDecision | undefined;
    try {
      // Autocommit: each reservation statement is atomic on its own (guarded insert, then a
      // compare-and-set take-over), so it needs no transaction of its own: a first execution
      // saves a BEGIN/COMMIT pair and a replay is a single statement.
      await this.db.withoutTransaction(async () => {
        decision = await this.ledger.reserve(g.ledger);
      });
    } catch (e) {
      if (!decision || decision.kind === 'reserved') {
        return this.handler.afterFailure(e, g, undefined, subscriber);
      }
    }
    if (!decision) return;
    if (decision.kind !== 'reserved') return this.settle(g, decision, next, subscriber);
    this.answers.reserved(g, decision);
    const { reservation } = decision;
    g.inFlightTicket = this.registry.enter(g.info.scope, g.info.key);
    // Diagnostics channel: the reservation is committed, the handler has not run.
    publishGate(gateAfterReservationCommit, g.info);
    this.registry.setLease(g.info.scope, g.info.key, Date.now() + g.opts.leaseMs);
    const capture = new ResponseCapture(rawResponse(g.res));
    const keeper = keepLeaseAlive(this.ledger, this.db, reservation, g.opts.leaseMs, (e) =>
      this.answers.log('warn', 'lease-renewal-failed', g, { error: errorText(e) }),
    );
    try {
      await this.db
        .inTransaction(() => this.handler.run(g, reservation, next, subscriber, capture))
        .finally(() => keeper?.stop());
    } catch (e) {
      if (!(e instanceof Abort) || !e.keepReservation) {
        await this.ledger
          .release(reservation)
          .catch((err) => this.answers.log('warn', 'release-failed', g, { error: String(err) }));
      }
      return this.handler.afterFailure(e, g, capture, subscriber);
    }
    // Diagnostics channel: the business transaction has committed, no byte has left yet.
    publishGate(gateAfterCommit, g.info);
    this.answers.created(g, capture);
  }
}
