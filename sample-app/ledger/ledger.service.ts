import { Inject, Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { SAMPLE_CHANNELS } from '../ops/sample.channels';
import {
  PAYMENT_REFUNDED,
  type PaymentCapturedEvent,
  type PaymentRefundedEvent,
} from '../payments/payments.service';
import { LEDGER_DEMO, type LedgerDemoSwitches } from './ledger.config';
import { LedgerEntry } from './ledger-entry.entity';

@Injectable()
export class LedgerService {
  private readonly runs = new Map<string, number>();

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    @Inject(LEDGER_DEMO) private readonly demo: LedgerDemoSwitches,
  ) {}

  /**
   * Applies one payment event (`payment.captured` or `payment.refunded`) in the ambient
   * transaction (the inbox's): its entry, then the demo switches. The one method both consumers
   * call: the `@EventPattern()` one on a broker, the `@OnOutboxMessage()` one on the embedded
   * default, so the entries are the same whichever transport delivered the event.
   */
  async consume(
    type: string,
    event: PaymentCapturedEvent | PaymentRefundedEvent,
    messageId: string,
  ): Promise<void> {
    if (type === PAYMENT_REFUNDED) {
      await this.recordRefund(event as PaymentRefundedEvent, messageId);
    } else await this.recordCapture(event as PaymentCapturedEvent, messageId);
    // Diagnostics channel (the fault suite crashes here): entry written, inbox transaction not committed.
    const inHandler = SAMPLE_CHANNELS.ledgerInHandler;
    if (inHandler.hasSubscribers) inHandler.publish({ messageId });
    await this.misbehave(messageId);
  }

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

  /** The demo switches (LEDGER_DEMO_DELAY_MS, LEDGER_DEMO_FAIL_ATTEMPTS), after the entry is written. */
  private async misbehave(messageId: string): Promise<void> {
    if (this.demo.delayMs > 0) await new Promise((r) => setTimeout(r, this.demo.delayMs));
    if (this.demo.failAttempts <= 0) return;
    const run = (this.runs.get(messageId) ?? 0) + 1;
    this.runs.set(messageId, run);
    if (run <= this.demo.failAttempts) {
      throw new Error(
        `Demo failure of the ledger consumer (LEDGER_DEMO_FAIL_ATTEMPTS=${this.demo.failAttempts}, run ${run})`,
      );
    }
    this.runs.delete(messageId);
  }

  findByPayment(paymentId: string): Promise<LedgerEntry[]> {
    return this.txHost.tx
      .getRepository(LedgerEntry)
      .find({ where: { paymentId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }
}
