import { Module } from '@nestjs/common';
import { NotificationsConsumer } from './notifications.consumer';
import { NotificationsController } from './notifications.controller';
import { NotificationsService } from './notifications.service';

/**
 * The notifications service: the second `payment.captured` consumer (its own inbox, its own
 * queue) and `GET /notifications?paymentId=…`. In the sample app it shares the process and the
 * database with the ledger for brevity; `CONSUMERS` chooses which services a process runs.
 */
@Module({
  controllers: [NotificationsController, NotificationsConsumer],
  providers: [NotificationsService],
})
export class NotificationsModule {}
