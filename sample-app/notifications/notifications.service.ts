import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import type { PaymentCapturedEvent } from '../payments/payments.service';
import { Notification } from './notification.entity';

@Injectable()
export class NotificationsService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Writes the payment's notification in the ambient transaction (the inbox's). */
  async notifyCapture(event: PaymentCapturedEvent, messageId: string): Promise<void> {
    await this.txHost.tx.getRepository(Notification).insert({
      id: randomUUID(),
      paymentId: event.paymentId,
      customerId: event.customerId,
      text: `Payment of ${Number(event.amount).toFixed(2)} ${event.currency} captured`,
      messageId,
      createdAt: new Date(),
    });
  }

  findByPayment(paymentId: string): Promise<Notification[]> {
    return this.txHost.tx
      .getRepository(Notification)
      .find({ where: { paymentId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }
}
