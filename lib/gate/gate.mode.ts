import type { CallHandler } from '@nestjs/common';
import type { Subscriber } from 'rxjs';
import type { DatabaseService } from '../persistence/database.service';
import type { IdempotencyLedger, SettledDecision } from '../persistence/idempotency-ledger';
import type { GateAnswers } from './gate-answers';
import type { GuardedRequest } from './guarded-request';
import type { HandlerExecution } from './handler-execution';
import type { InFlightRegistry } from './in-flight.registry';

/**
 * What the two execution modes share: their collaborators, and what a request that does not run
 * does (answer the ledger's decision, or under the `wait` policy try again).
 * @internal
 */
export abstract class GateMode {
  constructor(
    protected readonly db: DatabaseService,
    protected readonly ledger: IdempotencyLedger,
    protected readonly answers: GateAnswers,
    protected readonly handler: HandlerExecution,
    protected readonly registry: InFlightRegistry,
  ) {}

  abstract run(
    g: GuardedRequest,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
  ): Promise<void>;

  /** Answers a decision other than `reserved`, or, while the `wait` policy waits, runs again. */
  protected async settle(
    g: GuardedRequest,
    decision: SettledDecision,
    next: CallHandler,
    subscriber: Subscriber<unknown>,
  ): Promise<void> {
    const answer = await this.answers.waitOrAnswer(g, this.answers.of(g, decision));
    if (answer) return this.answers.send(g, answer, subscriber);
    return this.run(g, next, subscriber);
  }
}
