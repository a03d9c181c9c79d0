import { Controller, Inject } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { IdempotentConsumer } from '../../lib';
import { SAMPLE_CHANNELS } from '../ops/sample.channels';
import { LEDGER_SERVICE } from '../messaging/consumer-services';
import { incomingMessage } from '../messaging/incoming-message';
import {
  PAYMENT_CAPTURED,
  PAYMENT_REFUNDED,
  PaymentCapturedEvent,
  PaymentRefundedEvent,
} from '../payments/payments.service';
import { LEDGER_DEMO, LedgerDemoSwitches } from './ledger.config';
import { LedgerService } from './ledger.service';

/**
 * The ledger: one entry per captured payment, through the inbox. The same handler runs on the
 * embedded transport, RabbitMQ and NATS (see ../messaging). `@IdempotentConsumer` records the
 * message id (the outbox message id the relay sent) in the transaction of the entry, so a
 * redelivered, republished or concurrently delivered `payment.captured` never writes a second
 * entry; a failed handler rolls back and runs again on redelivery. On RabbitMQ (`noAck: false`)
 * it acknowledges each delivery once the inbox has settled it. Bound to the ledger service's
 * queue only (`LEDGER_SERVICE`); the notifications service gets its own copy of each event.
 */
@Controller()
export class LedgerConsumer {
  private readonly runs = new Map<string, number>();

  constructor(
    private readonly ledger: LedgerService,
    @Inject(LEDGER_DEMO) private readonly demo: LedgerDemoSwitches,
  ) {}

  @EventPattern(PAYMENT_CAPTURED, LEDGER_SERVICE)
  @IdempotentConsumer({ consumer: 'ledger', acknowledge: true })
  async onPaymentCaptured(
    @Payload() event: PaymentCapturedEvent,
    @Ctx() context: unknown,
  ): Promise<void> {
    const { id } = incomingMessage(event, context);
    await this.ledger.recordCapture(event, id ?? '');
    // Diagnostics channel (the fault suite crashes here): entry written, inbox transaction not committed.
    const inHandler = SAMPLE_CHANNELS.ledgerInHandler;
    if (inHandler.hasSubscribers) inHandler.publish({ messageId: id });
    await this.misbehave(id ?? '');
  }

  /**
   * A refund entry per `payment.refunded`, through the same inbox (consumer `ledger`); it comes
   * after its payment's capture on the same partition key, so its entry's position follows.
   */
  @EventPattern(PAYMENT_REFUNDED, LEDGER_SERVICE)
  @IdempotentConsumer({ consumer: 'ledger', acknowledge: true })
  async onPaymentRefunded(
    @Payload() event: PaymentRefundedEvent,
    @Ctx() context: unknown,
  ): Promise<void> {
    const { id } = incomingMessage(event, context);
    await this.ledger.recordRefund(event, id ?? '');
    const inHandler = SAMPLE_CHANNELS.ledgerInHandler;
    if (inHandler.hasSubscribers) inHandler.publish({ messageId: id });
    await this.misbehave(id ?? '');
  }

  /** The demo switches (LEDGER_DEMO_DELAY_MS, LEDGER_DEMO_FAIL_ATTEMPTS), after the entry is written. */
  private async misbehave(messageId: string): Promise<void> {
    if (this.demo.delayMs > 0) await new Promise((r) => setTimeout(r, this.demo.delayMs));
    if (this.demo.failAttempts <= 0) return;
    const run = (this.runs.get(messageId) ?? 0) + 1;
    this.runs.set(messageId, run);
    if (run <= this.demo.failAttempts) {
      throw new Error(
        `Demo failure of the ledger consumer (LEDGER_DEMO_FAIL_ATTEMPTS=${this.demo.failAttempts}, run ${run})`,
      );
    }
    this.runs.delete(messageId);
  }
}
