import {
  Args,
  Context,
  Field,
  Float,
  InputType,
  Mutation,
  ObjectType,
  Query,
  Resolver,
} from '@nestjs/graphql';
import {
  IsISO4217CurrencyCode,
  IsNotEmpty,
  IsNumber,
  IsPositive,
  IsString,
  Max,
  MaxLength,
} from 'class-validator';
import { Idempotent } from '../../lib';
import { demoSwitches, toJson } from './payments.controller';
import { PaymentsService } from './payments.service';

/** `POST /payments`' body, as a GraphQL input (checked by the same rules). */
@InputType()
export class CreatePaymentInput {
  @Field(() => Float)
  @IsNumber({ allowNaN: false, allowInfinity: false, maxDecimalPlaces: 2 })
  @IsPositive()
  @Max(1e15)
  amount!: number;

  @Field()
  @IsISO4217CurrencyCode()
  currency!: string;

  @Field()
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  customerId!: string;
}

/** The payment JSON of `POST /payments`, as a GraphQL type. */
@ObjectType('Payment')
export class PaymentModel {
  @Field() id!: string;
  @Field(() => Float) amount!: number;
  @Field() currency!: string;
  @Field() customerId!: string;
  @Field() status!: string;
  @Field() createdAt!: string;
}

/** The HTTP request behind a GraphQL operation (Apollo and Mercurius both put it as `req`). */
interface GqlContext {
  req?: { headers?: Record<string, string | string[] | undefined> };
}

const header = (ctx: GqlContext, name: string): string | undefined => {
  const v = ctx.req?.headers?.[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * `POST /graphql`, mutation `createPayment(input: CreatePaymentInput!): Payment`: the same payment
 * and `payment.captured` outbox event as `POST /payments`. `@Idempotent()` keys it by the HTTP
 * request's `Idempotency-Key` header: the value commits with the payment, a retry gets the same
 * payment (and `Idempotency-Replayed: true` on the HTTP response), the same key with another
 * input an error with `extensions.code` `IDEMPOTENCY_KEY_REUSED`. X-Tenant-Id, X-Demo-Delay-Ms
 * and X-Demo-Fail are read as `POST /payments` reads them.
 */
@Resolver(() => PaymentModel)
export class PaymentsResolver {
  constructor(private readonly payments: PaymentsService) {}

  @Query(() => PaymentModel, { nullable: true })
  async payment(@Args('id') id: string) {
    const p = await this.payments.findOne(id);
    return p ? toJson(p) : null;
  }

  @Mutation(() => PaymentModel)
  @Idempotent()
  async createPayment(@Args('input') input: CreatePaymentInput, @Context() ctx: GqlContext) {
    const demo = demoSwitches(header(ctx, 'x-demo-delay-ms'), header(ctx, 'x-demo-fail'));
    return toJson(await this.payments.create(input, header(ctx, 'x-tenant-id') || 'public', demo));
  }
}
