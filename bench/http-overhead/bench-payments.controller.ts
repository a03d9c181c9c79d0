import { Body, Controller, Get, Post, Res } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Idempotent } from '../../lib';
import { CreatePaymentDto } from '../../sample-app/payments/create-payment.dto';
import type { Payment } from '../../sample-app/payments/payment.entity';
import { BenchPaymentsService } from './bench-payments.service';
import { StatementCounter } from './statement-counter';

/**
 * The three routes the benchmark compares. They share one handler body (one payment insert,
 * the same JSON answer and Location header); only the wrapping differs:
 * - `unguarded`: the fair baseline, a POST that opens a transaction and inserts the payment;
 * - `transactional` / `leased`: the same body under `@Idempotent()` in each mode (the gate
 *   opens the transaction).
 */
@Controller('bench/payments')
export class BenchPaymentsController {
  constructor(
    private readonly payments: BenchPaymentsService,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  @Post('unguarded')
  unguarded(@Body() dto: CreatePaymentDto, @Res({ passthrough: true }) res: any) {
    return this.txHost.withTransaction(() => this.create(dto, res));
  }

  @Post('transactional')
  @Idempotent({ mode: 'transactional' })
  transactional(@Body() dto: CreatePaymentDto, @Res({ passthrough: true }) res: any) {
    return this.create(dto, res);
  }

  @Post('leased')
  @Idempotent({ mode: 'leased' })
  leased(@Body() dto: CreatePaymentDto, @Res({ passthrough: true }) res: any) {
    return this.create(dto, res);
  }

  private async create(dto: CreatePaymentDto, res: any) {
    const payment = await this.payments.create(dto);
    const location = `/payments/${payment.id}`;
    if (typeof res.header === 'function') res.header('Location', location);
    else res.setHeader('Location', location);
    return toJson(payment);
  }
}

/** Statement counts since the last call (read by the benchmark between scenarios). */
@Controller('bench')
export class BenchStatsController {
  constructor(private readonly counter: StatementCounter) {}

  @Get('statements')
  statements() {
    return this.counter.take();
  }
}

function toJson(p: Payment) {
  return {
    id: p.id,
    amount: p.amount,
    currency: p.currency,
    customerId: p.customerId,
    status: p.status,
    createdAt: new Date(p.createdAt).toISOString(),
  };
}
