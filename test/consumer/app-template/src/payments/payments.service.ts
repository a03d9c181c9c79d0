import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { OutboxService } from 'nestjs-exactly-once';
import { randomUUID } from 'node:crypto';
import { Payment } from './payment.entity';

@Injectable()
export class PaymentsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly outbox: OutboxService,
  ) {}

  async create(input: { customerId: string; amount: number }): Promise<Payment> {
    const payment = { id: randomUUID(), customerId: input.customerId, amount: input.amount };
    // Through TransactionHost.tx: the request's transaction, with the idempotency record.
    await this.txHost.tx.getRepository(Payment).insert(payment);
    await this.outbox.add({
      type: 'payment.captured',
      partitionKey: payment.id,
      payload: { paymentId: payment.id, amount: payment.amount },
    });
    return payment;
  }
}
