import { DynamicModule, Module } from '@nestjs/common';
import type { BrokerConfig } from '../messaging/broker.config';
import { NotificationsConsumer } from './notifications.consumer';
import { NotificationsController } from './notifications.controller';
import { NotificationsOutboxHandler } from './notifications.outbox-handler';
import { NotificationsService } from './notifications.service';

/**
 * The notifications service: the second `payment.captured` consumer (its own inbox, its own
 * queue; on the embedded default an `@OnOutboxMessage()` handler) and
 * `GET /notifications?paymentId=…`. In the sample app it shares the process and the database
 * with the ledger for brevity; `CONSUMERS` chooses which services a process runs on a broker.
 */
@Module({})
export class NotificationsModule {
  static forRoot(broker: BrokerConfig): DynamicModule {
    return {
      module: NotificationsModule,
      controllers: [NotificationsController, NotificationsConsumer],
      providers: [
        NotificationsService,
        ...(broker.kind === 'embedded' ? [NotificationsOutboxHandler] : []),
      ],
    };
  }
}
