import { BadRequestException, Controller, Get, Query } from '@nestjs/common';
import type { LedgerEntry } from './ledger-entry.entity';
import { LedgerService } from './ledger.service';

const PAYMENT_ID = /^[A-Za-z0-9-]{1,36}$/;

/** JSON shape of a ledger entry. */
function toJson(e: LedgerEntry) {
  return {
    id: e.id,
    paymentId: e.paymentId,
    entryType: e.entryType,
    amount: e.amount,
    currency: e.currency,
    customerId: e.customerId,
    messageId: e.messageId,
    position: e.position,
    createdAt: new Date(e.createdAt).toISOString(),
  };
}

@Controller('ledger')
export class LedgerController {
  constructor(private readonly ledger: LedgerService) {}

  /** `GET /ledger?paymentId=…`: the payment's ledger entries (exactly one once its event was consumed). */
  @Get()
  async list(@Query('paymentId') paymentId: unknown) {
    if (typeof paymentId !== 'string' || !PAYMENT_ID.test(paymentId)) {
      throw new BadRequestException(
        'Query parameter paymentId is required once: a payment id (up to 36 letters, digits and "-")',
      );
    }
    return (await this.ledger.findByPayment(paymentId)).map(toJson);
  }
}
