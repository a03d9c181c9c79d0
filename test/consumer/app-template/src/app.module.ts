import { Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IdempotencyModule } from 'nestjs-exactly-once';
import { databaseOptions } from './database';
import { MessagingModule } from './messaging.module';
import { LedgerConsumer } from './ledger/ledger.consumer';
import { PaymentsController } from './payments/payments.controller';
import { PaymentsService } from './payments/payments.service';

@Module({
  imports: [
    TypeOrmModule.forRoot(databaseOptions),
    ClsModule.forRoot({
      global: true,
      middleware: { mount: true },
      plugins: [
        new ClsPluginTransactional({
          adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
        }),
      ],
    }),
    MessagingModule, // the OutboxPublisher the relay sends through
    IdempotencyModule.forRoot(),
  ],
  controllers: [PaymentsController, LedgerConsumer], // your controllers
  providers: [PaymentsService], // your services
})
export class AppModule {}
