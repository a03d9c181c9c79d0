import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import type { CreatePaymentDto } from '../../sample-app/payments/create-payment.dto';
import { Payment } from '../../sample-app/payments/payment.entity';

/**
 * The handler body every bench route shares: ONE insert of the payment in the ambient
 * transaction (the setup of issue 2's benchmark). Kept here rather than reusing the sample
 * app's PaymentsService, which also writes an outbox event: a heavier body would make the
 * gate's relative overhead look smaller than it is.
 */
@Injectable()
export class BenchPaymentsService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async create(dto: CreatePaymentDto): Promise<Payment> {
    const repo = this.txHost.tx.getRepository(Payment);
    const payment = repo.create({
      id: randomUUID(),
      tenantId: 'public',
      amount: dto.amount,
      currency: dto.currency,
      customerId: dto.customerId,
      status: 'captured',
      createdAt: new Date(),
    });
    await repo.insert(payment);
    return payment;
  }
}
