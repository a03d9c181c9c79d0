import { Module } from '@nestjs/common';
import { LedgerConsumer } from './ledger.consumer';
import { LEDGER_DEMO, ledgerDemoFromEnv } from './ledger.config';
import { LedgerController } from './ledger.controller';
import { LedgerService } from './ledger.service';

/** The ledger: the `payment.captured` consumer (through the inbox) and `GET /ledger?paymentId=…`. */
@Module({
  controllers: [LedgerController, LedgerConsumer],
  providers: [LedgerService, { provide: LEDGER_DEMO, useFactory: ledgerDemoFromEnv }],
})
export class LedgerModule {}
