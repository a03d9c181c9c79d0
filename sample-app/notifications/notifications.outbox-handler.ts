import { Injectable } from '@nestjs/common';
import { OnOutboxMessage, type OutboxHandlerContext } from '../../lib';
import { PAYMENT_CAPTURED, type PaymentCapturedEvent } from '../payments/payments.service';
import { NotificationsService } from './notifications.service';

/**
 * The notifications service's consumer on the embedded default (no BROKER_URL): an in-process
 * outbox handler with its own inbox record, keyed by (`notifications`, message id), as
 * `NotificationsConsumer` has on a broker; both call `NotificationsService.notifyCapture()`.
 */
@Injectable()
export class NotificationsOutboxHandler {
  constructor(private readonly notifications: NotificationsService) {}

  @OnOutboxMessage(PAYMENT_CAPTURED, { name: 'notifications' })
  async onPaymentCaptured(
    event: PaymentCapturedEvent,
    { message }: OutboxHandlerContext,
  ): Promise<void> {
    await this.notifications.notifyCapture(event, message.id);
  }
}
