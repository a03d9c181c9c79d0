import { DynamicModule, Module } from '@nestjs/common';
import type { BrokerConfig } from '../messaging/broker.config';
import { LedgerConsumer } from './ledger.consumer';
import { LEDGER_DEMO, ledgerDemoFromEnv } from './ledger.config';
import { LedgerController } from './ledger.controller';
import { LedgerOutboxHandler } from './ledger.outbox-handler';
import { LedgerService } from './ledger.service';

/**
 * The ledger: the consumer of `payment.captured` / `payment.refunded` (through the inbox) and
 * `GET /ledger?paymentId=…`. On a broker the `@EventPattern()` consumer receives the events; on
 * the embedded default (no BROKER_URL) the `@OnOutboxMessage()` handler does.
 */
@Module({})
export class LedgerModule {
  static forRoot(broker: BrokerConfig): DynamicModule {
    return {
      module: LedgerModule,
      controllers: [LedgerController, LedgerConsumer],
      providers: [
        LedgerService,
        { provide: LEDGER_DEMO, useFactory: ledgerDemoFromEnv },
        ...(broker.kind === 'embedded' ? [LedgerOutboxHandler] : []),
      ],
    };
  }
}
