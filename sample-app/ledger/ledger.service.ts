import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import type { PaymentCapturedEvent } from '../payments/payments.service';
import { LedgerEntry } from './ledger-entry.entity';

@Injectable()
export class LedgerService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Writes the capture entry of a payment in the ambient transaction (the inbox's). */
  async recordCapture(event: PaymentCapturedEvent, messageId: string): Promise<LedgerEntry> {
    const repo = this.txHost.tx.getRepository(LedgerEntry);
    const entry = repo.create({
      id: randomUUID(),
      paymentId: event.paymentId,
      tenantId: event.tenantId,
      entryType: 'capture',
      amount: event.amount,
      currency: event.currency,
      customerId: event.customerId,
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
