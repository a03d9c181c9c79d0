import { BadRequestException, Controller, Get, Query } from '@nestjs/common';
import type { Notification } from './notification.entity';
import { NotificationsService } from './notifications.service';

const PAYMENT_ID = /^[A-Za-z0-9-]{1,36}$/;

function toJson(n: Notification) {
  return {
    id: n.id,
    paymentId: n.paymentId,
    customerId: n.customerId,
    text: n.text,
    messageId: n.messageId,
    createdAt: new Date(n.createdAt).toISOString(),
  };
}

@Controller('notifications')
export class NotificationsController {
  constructor(private readonly notifications: NotificationsService) {}

  /** `GET /notifications?paymentId=…`: the payment's notifications (one once its event was consumed). */
  @Get()
  async list(@Query('paymentId') paymentId: unknown) {
    if (typeof paymentId !== 'string' || !PAYMENT_ID.test(paymentId)) {
      throw new BadRequestException(
        'Query parameter paymentId is required once: a payment id (up to 36 letters, digits and "-")',
      );
    }
    return (await this.notifications.findByPayment(paymentId)).map(toJson);
  }
}
