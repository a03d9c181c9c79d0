import { Body, Controller, Post } from '@nestjs/common';
import { Idempotent } from 'nestjs-exactly-once';
import { PaymentsService } from './payments.service';

@Controller('payments')
export class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  @Post()
  @Idempotent()
  create(@Body() body: { customerId: string; amount: number }) {
    return this.payments.create(body);
  }
}
