import { DynamicModule, Module } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Args,
  Field,
  Float,
  GraphQLModule,
  InputType,
  Mutation,
  ObjectType,
  Query,
  Resolver,
} from '@nestjs/graphql';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Idempotent } from '../../lib';
import { CreatePaymentDto } from '../../sample-app/payments/create-payment.dto';
import { BenchAppModule } from '../http-overhead/bench-app.module';
import { BenchPaymentsService } from '../http-overhead/bench-payments.service';

/** The REST route's body (its checks too: the global ValidationPipe whitelists decorated fields). */
@InputType()
class BenchPaymentInput extends CreatePaymentDto {
  @Field(() => Float) declare amount: number;
  @Field() declare currency: string;
  @Field() declare customerId: string;
}

@ObjectType('Payment')
class BenchPayment {
  @Field() id!: string;
  @Field(() => Float) amount!: number;
  @Field() currency!: string;
  @Field() customerId!: string;
  @Field() status!: string;
}

/**
 * The same body as the REST routes of bench/http-overhead (one payment insert), as GraphQL
 * mutations: `createPayment` under `@Idempotent()` (the gate opens the transaction) and
 * `createPaymentUnguarded`, which opens the transaction itself (the fair baseline).
 */
@Resolver(() => BenchPayment)
class BenchPaymentsResolver {
  constructor(
    private readonly payments: BenchPaymentsService,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  @Query(() => String)
  ping() {
    return 'pong';
  }

  @Mutation(() => BenchPayment)
  @Idempotent()
  createPayment(@Args('input') input: BenchPaymentInput) {
    return this.create(input);
  }

  @Mutation(() => BenchPayment)
  createPaymentUnguarded(@Args('input') input: BenchPaymentInput) {
    return this.txHost.withTransaction(() => this.create(input));
  }

  private async create(input: BenchPaymentInput) {
    const p = await this.payments.create(input);
    return {
      id: p.id,
      amount: p.amount,
      currency: p.currency,
      customerId: p.customerId,
      status: p.status,
    };
  }
}

/** bench/http-overhead's app (REST routes, the library, the payments table) with POST /graphql (Apollo). */
@Module({})
export class GraphqlBenchModule {
  static register(dbUrl: string): DynamicModule {
    return {
      module: GraphqlBenchModule,
      imports: [
        BenchAppModule.register(dbUrl),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          autoSchemaFile: true,
          playground: false,
        }),
      ],
      providers: [BenchPaymentsService, BenchPaymentsResolver],
    };
  }
}
