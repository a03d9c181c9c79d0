import type { CallHandler } from '@nestjs/common';
import type { Subscriber } from 'rxjs';
import { gateAfterCommit, publishGate } from '../diagnostics/diagnostics.channels';
import type { LedgerDecision } from '../persistence/idempotency-ledger';
import type { GuardedRequest } from './guarded-request';
import { rawResponse } from '../internal/http-platform';
import { ResponseCapture } from './response-capture';
import { GateMode } from './gate.mode';

/**
 * Transactional mode: reservation, handler and completion in ONE transaction; a crash rolls it
 * all back and the key is free for the retry at once. The ledger may settle a request before any
 * transaction opens (a completed record it knows, or the read-first policy's one read).
 * @internal
 */
export class TransactionalMode extends GateMode {
  override async run(
    g: GuardedRequest,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
  ): Promise<void> {
    const settled = await this.ledger.settleBeforeTransaction(g.ledger, g.opts);
    if (settled) return this.answers.send(g, this.answers.of(g, settled), subscriber);
    let capture: ResponseCapture | undefined;
    let decision: LedgerDecision | undefined;
    try {
      await this.db.inGateTransaction(async () => {
        decision = await this.ledger.reserve(g.ledger);
        if (decision.kind !== 'reserved') return;
        this.answers.reserved(g, decision);
        g.inFlightTicket = this.registry.enter(g.info.scope, g.info.key);
        capture = new ResponseCapture(rawResponse(g.res));
        await this.handler.run(g, decision.reservation, next, subscriber, capture);
      });
    } catch (e) {
      // A replay or conflict wrote nothing: if only the end of its transaction failed (Babelfish
      // rolls a transaction back itself after a lock time-out), the decision stands.
      if (!decision || decision.kind === 'reserved') {
        return this.handler.afterFailure(e, g, capture, subscriber);
      }
    }
    if (!decision) return;
    this.ledger.observe(g.opts, decision.kind === 'replay');
    if (decision.kind !== 'reserved') return this.settle(g, decision, next, subscriber);
    // Diagnostics channel: the business transaction has committed, no byte has left yet.
    publishGate(gateAfterCommit, g.info);
    if (capture) this.answers.created(g, capture);
  }
}
