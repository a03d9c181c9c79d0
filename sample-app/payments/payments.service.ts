import { BadRequestException, HttpException, Injectable, NotFoundException } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { OutboxService } from '../../lib';
import { SAMPLE_CHANNELS } from '../ops/sample.channels';
import type { CreatePaymentDto } from './create-payment.dto';
import type { CreateRefundDto } from './create-refund.dto';
import { Payment } from './payment.entity';

/** Type of the event POST /payments adds to the outbox (partition key: the payment id). */
export const PAYMENT_CAPTURED = 'payment.captured';

/** Payload of `payment.captured`. */
export interface PaymentCapturedEvent {
  paymentId: string;
  tenantId: string;
  amount: number;
  currency: string;
  customerId: string;
  capturedAt: string;
}

/** Type of the event POST /payments/:id/refunds adds to the outbox (partition key: the payment id). */
export const PAYMENT_REFUNDED = 'payment.refunded';

/** Payload of `payment.refunded`: an amount of a captured payment given back. */
export interface PaymentRefundedEvent {
  paymentId: string;
  refundId: string;
  tenantId: string;
  amount: number;
  currency: string;
  customerId: string;
  refundedAt: string;
}

export interface DemoSwitches {
  delayMs: number;
  failStatus?: number;
}

@Injectable()
export class PaymentsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly outbox: OutboxService,
  ) {}

  /**
   * Inserts the payment and its `payment.captured` event in the ambient transaction (opened by
   * the idempotency gate): the event is published if and only if the payment commits.
   */
  async create(dto: CreatePaymentDto, tenantId: string, demo: DemoSwitches): Promise<Payment> {
    const repo = this.txHost.tx.getRepository(Payment);
    const payment = repo.create({
      id: randomUUID(),
      tenantId,
      amount: dto.amount,
      currency: dto.currency,
      customerId: dto.customerId,
      status: 'captured',
      createdAt: new Date(),
    });
    await repo.insert(payment);
    const event: PaymentCapturedEvent = {
      paymentId: payment.id,
      tenantId,
      amount: payment.amount,
      currency: payment.currency,
      customerId: payment.customerId,
      capturedAt: payment.createdAt.toISOString(),
    };
    await this.outbox.add({ type: PAYMENT_CAPTURED, partitionKey: payment.id, payload: event });
    // Diagnostics channel (the fault suite crashes here): payment and event written, not committed.
    const inHandler = SAMPLE_CHANNELS.paymentsInHandler;
    if (inHandler.hasSubscribers) inHandler.publish({ paymentId: payment.id });
    if (demo.delayMs > 0) await new Promise((r) => setTimeout(r, demo.delayMs));
    if (demo.failStatus) {
      throw new HttpException(`Demo failure (X-Demo-Fail: ${demo.failStatus})`, demo.failStatus);
    }
    return payment;
  }

  /**
   * A refund of a payment: its status becomes `refunded` and its `payment.refunded` event goes
   * to the outbox in the ambient transaction, with the payment's partition key, so it follows the
   * payment's `payment.captured` (and earlier refunds) in the same partition or queue. Each
   * refund is at most the payment's amount (the demo keeps no running total).
   */
  async refund(id: string, dto: CreateRefundDto): Promise<PaymentRefundedEvent> {
    const repo = this.txHost.tx.getRepository(Payment);
    const payment = await repo.findOneBy({ id });
    if (!payment) throw new NotFoundException(`Payment ${id} not found`);
    if (dto.amount > payment.amount) {
      throw new BadRequestException(
        `A refund is at most the payment's amount (${payment.amount} ${payment.currency})`,
      );
    }
    await repo.update({ id }, { status: 'refunded' });
    const event: PaymentRefundedEvent = {
      paymentId: payment.id,
      refundId: randomUUID(),
      tenantId: payment.tenantId,
      amount: dto.amount,
      currency: payment.currency,
      customerId: payment.customerId,
      refundedAt: new Date().toISOString(),
    };
    await this.outbox.add({ type: PAYMENT_REFUNDED, partitionKey: payment.id, payload: event });
    return event;
  }

  findOne(id: string): Promise<Payment | null> {
    return this.txHost.tx.getRepository(Payment).findOneBy({ id });
  }

  findByCustomer(customerId?: string): Promise<Payment[]> {
    return this.txHost.tx
      .getRepository(Payment)
      .find({ where: customerId ? { customerId } : {}, order: { createdAt: 'ASC', id: 'ASC' } });
  }
}
