import {
  BadRequestException,
  Body,
  Controller,
  Get,
  Headers,
  NotFoundException,
  Param,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import { Idempotent } from '../../lib';
import { CreatePaymentDto } from './create-payment.dto';
import { CreateRefundDto } from './create-refund.dto';
import { PaymentsService } from './payments.service';
import type { Payment } from './payment.entity';

/** JSON shape of a payment. */
export function toJson(p: Payment) {
  return {
    id: p.id,
    amount: p.amount,
    currency: p.currency,
    customerId: p.customerId,
    status: p.status,
    createdAt: new Date(p.createdAt).toISOString(),
  };
}

export function demoSwitches(delay?: string, fail?: string) {
  let delayMs = 0;
  if (delay !== undefined) {
    delayMs = Number(delay);
    if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > 10_000) {
      throw new BadRequestException('X-Demo-Delay-Ms must be an integer between 0 and 10000');
    }
  }
  let failStatus: number | undefined;
  if (fail !== undefined) {
    failStatus = Number(fail);
    if (!Number.isInteger(failStatus) || failStatus < 400 || failStatus > 599) {
      throw new BadRequestException('X-Demo-Fail must be an HTTP error status between 400 and 599');
    }
  }
  return { delayMs, failStatus };
}

@Controller('payments')
export class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  @Post()
  @Idempotent() // mode: IDEMPOTENCY_MODE, applied module-wide in AppModule
  async create(
    @Body() dto: CreatePaymentDto,
    @Headers('x-tenant-id') tenant: string | undefined,
    @Headers('x-demo-delay-ms') delay: string | undefined,
    @Headers('x-demo-fail') fail: string | undefined,
    @Res({ passthrough: true }) res: any,
  ) {
    const payment = await this.payments.create(dto, tenant || 'public', demoSwitches(delay, fail));
    const location = `/payments/${payment.id}`;
    if (typeof res.header === 'function') res.header('Location', location);
    else res.setHeader('Location', location);
    return toJson(payment);
  }

  /**
   * `POST /payments/:id/refunds` `{ amount }`: gives back part or all of a payment; 201 with the
   * refund (`id`, `paymentId`, `amount`, `currency`, `refundedAt`); 404 for an unknown payment,
   * 400 for more than its amount. Its `payment.refunded` event has the payment's partition key.
   */
  @Post(':id/refunds')
  @Idempotent()
  async refund(@Param('id') id: string, @Body() dto: CreateRefundDto) {
    const r = await this.payments.refund(id, dto);
    return {
      id: r.refundId,
      paymentId: r.paymentId,
      amount: r.amount,
      currency: r.currency,
      refundedAt: r.refundedAt,
    };
  }

  @Get(':id')
  async findOne(@Param('id') id: string) {
    const payment = await this.payments.findOne(id);
    if (!payment) throw new NotFoundException(`Payment ${id} not found`);
    return toJson(payment);
  }

  @Get()
  async list(@Query('customerId') customerId?: string) {
    return (await this.payments.findByCustomer(customerId)).map(toJson);
  }
}
