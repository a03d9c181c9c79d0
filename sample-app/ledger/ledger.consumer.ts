import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { IdempotentConsumer } from '../../lib';
import { LEDGER_SERVICE } from '../messaging/consumer-services';
import { incomingMessage } from '../messaging/incoming-message';
import {
  PAYMENT_CAPTURED,
  PAYMENT_REFUNDED,
  PaymentCapturedEvent,
  PaymentRefundedEvent,
} from '../payments/payments.service';
import { LedgerService } from './ledger.service';

/**
 * The ledger's consumer on a broker (RabbitMQ, NATS, Kafka; see ../messaging): one entry per
 * captured payment and per refund, through the inbox. `@IdempotentConsumer` records the message
 * id (the outbox message id the relay sent) in the transaction of the entry, so a redelivered,
 * republished or concurrently delivered event never writes a second entry; a failed handler
 * rolls back and runs again on redelivery. On RabbitMQ (`noAck: false`) it acknowledges each
 * delivery once the inbox has settled it. Bound to the ledger service's queue only
 * (`LEDGER_SERVICE`); the notifications service gets its own copy of each event. On the embedded
 * default (no BROKER_URL) the same `LedgerService.consume()` runs from
 * `LedgerOutboxHandler` (ledger.outbox-handler.ts) instead.
 */
@Controller()
export class LedgerConsumer {
  constructor(private readonly ledger: LedgerService) {}

  @EventPattern(PAYMENT_CAPTURED, LEDGER_SERVICE)
  @IdempotentConsumer({ consumer: 'ledger', acknowledge: true })
  async onPaymentCaptured(
    @Payload() event: PaymentCapturedEvent,
    @Ctx() context: unknown,
  ): Promise<void> {
    const { id } = incomingMessage(event, context);
    await this.ledger.consume(PAYMENT_CAPTURED, event, id ?? '');
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
    await this.ledger.consume(PAYMENT_REFUNDED, event, id ?? '');
  }
}
