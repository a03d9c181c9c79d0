import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { IdempotentConsumer } from '../../lib';
import { NOTIFICATIONS_SERVICE } from '../messaging/consumer-services';
import { incomingMessage } from '../messaging/incoming-message';
import { PAYMENT_CAPTURED, PaymentCapturedEvent } from '../payments/payments.service';
import { NotificationsService } from './notifications.service';

/**
 * The notifications service: a second consumer of `payment.captured`, with its own inbox
 * (consumer `notifications`) and its own queue or queue group, so it gets every event once
 * while the ledger gets its own copy. Bound only to the notifications service's transport
 * (`NOTIFICATIONS_SERVICE`), never to the ledger's queue.
 */
@Controller()
export class NotificationsConsumer {
  constructor(private readonly notifications: NotificationsService) {}

  @EventPattern(PAYMENT_CAPTURED, NOTIFICATIONS_SERVICE)
  @IdempotentConsumer({ consumer: 'notifications', acknowledge: true })
  async onPaymentCaptured(
    @Payload() event: PaymentCapturedEvent,
    @Ctx() context: unknown,
  ): Promise<void> {
    const { id } = incomingMessage(event, context);
    await this.notifications.notifyCapture(event, id ?? '');
  }
}
