import { Controller, ValidationPipe } from '@nestjs/common';
import { MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { Idempotent } from '../../lib';
import { CreatePaymentDto } from './create-payment.dto';
import { toJson } from './payments.controller';
import { PaymentsService } from './payments.service';

/** The request pattern that creates a payment over the broker (BROKER_URL nats://… or amqp://…). */
export const CREATE_PAYMENT_PATTERN = 'payments.create';

/** Invalid data: a 400 problem, as `POST /payments` answers (nothing stored, the key stays free). */
const validation = new ValidationPipe({
  whitelist: true,
  transform: true,
  exceptionFactory: (errors) =>
    new RpcException({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: errors.flatMap((e) => Object.values(e.constraints ?? {})).join('; '),
      retryable: false,
    }),
});

/**
 * `payments.create` over the broker: the `POST /payments` body in, the payment JSON out, the same
 * payment and `payment.captured` outbox event. `@Idempotent()` keys it by the transport's
 * `Idempotency-Key` header: the reply commits with the payment, a duplicate request gets the
 * same reply, one still in flight an RpcException with the 409 problem.
 */
@Controller()
export class PaymentsRpcController {
  constructor(private readonly payments: PaymentsService) {}

  @MessagePattern(CREATE_PAYMENT_PATTERN)
  @Idempotent()
  async create(@Payload(validation) dto: CreatePaymentDto) {
    return toJson(await this.payments.create(dto, 'public', { delayMs: 0 }));
  }
}
