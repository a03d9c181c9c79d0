import { Injectable } from '@nestjs/common';
import { OnOutboxMessage, type OutboxHandlerContext } from '../../lib';
import {
  PAYMENT_CAPTURED,
  PAYMENT_REFUNDED,
  type PaymentCapturedEvent,
  type PaymentRefundedEvent,
} from '../payments/payments.service';
import { LedgerService } from './ledger.service';

/**
 * The ledger's consumer on the embedded default (no BROKER_URL): an in-process outbox handler.
 * The relay runs it for each committed `payment.captured` / `payment.refunded` in its own
 * transaction with its inbox record, keyed by (`ledger`, message id): the same inbox consumer
 * name and the same entries as `LedgerConsumer` on a broker (both call `LedgerService.consume()`).
 * A failure rolls back; the relay retries the message with its backoff.
 */
@Injectable()
export class LedgerOutboxHandler {
  constructor(private readonly ledger: LedgerService) {}

  @OnOutboxMessage([PAYMENT_CAPTURED, PAYMENT_REFUNDED], { name: 'ledger' })
  async onPaymentEvent(
    event: PaymentCapturedEvent | PaymentRefundedEvent,
    { message }: OutboxHandlerContext,
  ): Promise<void> {
    await this.ledger.consume(message.type, event, message.id);
  }
}
