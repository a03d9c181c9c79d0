import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import type { PaymentCapturedEvent, PaymentRefundedEvent } from '../payments/payments.service';
import { LedgerEntry } from './ledger-entry.entity';

@Injectable()
export class LedgerService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Writes the capture entry of a payment in the ambient transaction (the inbox's). */
  recordCapture(event: PaymentCapturedEvent, messageId: string): Promise<LedgerEntry> {
    return this.record(event, 'capture', messageId);
  }

  /** Writes a refund entry of a payment in the ambient transaction (the inbox's). */
  recordRefund(event: PaymentRefundedEvent, messageId: string): Promise<LedgerEntry> {
    return this.record(event, 'refund', messageId);
  }

  /**
   * One entry, at the next position among its payment's entries: the position says in which
   * order the consumer applied a payment's events (the events of a payment come one at a time,
   * in order, from its partition or queue).
   */
  private async record(
    event: PaymentCapturedEvent | PaymentRefundedEvent,
    entryType: 'capture' | 'refund',
    messageId: string,
  ): Promise<LedgerEntry> {
    const repo = this.txHost.tx.getRepository(LedgerEntry);
    const before = await repo.countBy({ paymentId: event.paymentId });
    const entry = repo.create({
      id: randomUUID(),
      paymentId: event.paymentId,
      tenantId: event.tenantId,
      entryType,
      amount: event.amount,
      currency: event.currency,
      customerId: event.customerId,
      position: before + 1,
      messageId,
      createdAt: new Date(),
    });
    await repo.insert(entry);
    return entry;
  }

  findByPayment(paymentId: string): Promise<LedgerEntry[]> {
    return this.txHost.tx
      .getRepository(LedgerEntry)
      .find({ where: { paymentId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }
}
