import { Controller, Get } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IdempotentConsumer } from 'nestjs-exactly-once';
import { randomUUID } from 'node:crypto';
import { LedgerEntry } from './ledger-entry.entity';

@Controller()
export class LedgerConsumer {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @EventPattern('payment.captured')
  @IdempotentConsumer({ acknowledge: true })
  async onCaptured(@Payload() event: { paymentId: string; amount: number }): Promise<void> {
    // A redelivered message skips this: the ledger gets one entry per payment.
    await this.txHost.tx
      .getRepository(LedgerEntry)
      .insert({ id: randomUUID(), paymentId: event.paymentId, amount: event.amount });
  }

  @Get('ledger')
  list(): Promise<LedgerEntry[]> {
    return this.txHost.tx.getRepository(LedgerEntry).find();
  }
}
