import { Body, ConflictException, Controller, Get, Headers, Post, Res } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { Idempotent } from '../../lib';
import { encodeSnapshot } from '../../lib/gate/response-snapshot';
import { DatabaseService } from '../../lib/persistence/database.service';
import { CreatePaymentDto } from '../../sample-app/payments/create-payment.dto';
import type { Payment } from '../../sample-app/payments/payment.entity';
import { BenchPaymentsService } from './bench-payments.service';
import { StatementCounter } from './statement-counter';

/**
 * The three routes the benchmark compares. They share one handler body (one payment insert,
 * the same JSON answer and Location header); only the wrapping differs:
 * - `unguarded`: the fair baseline, a POST that opens a transaction and inserts the payment;
 * - `transactional` / `leased`: the same body under `@Idempotent()` in each mode (the gate
 *   opens the transaction);
 * - `floor`: a control, not a product path: the unguarded route plus the ledger's two
 *   statements (the gate's own SQL for a first execution on this database, same executor, the
 *   transaction opened as the gate opens it) issued directly, with no interceptor. It measures
 *   what the ledger's statements cost on this machine, so that (b) can be split into the
 *   database's share and the gate's own.
 */
@Controller('bench/payments')
export class BenchPaymentsController {
  constructor(
    private readonly payments: BenchPaymentsService,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: DatabaseService,
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

  @Post('floor')
  floor(
    @Body() dto: CreatePaymentDto,
    @Res({ passthrough: true }) res: any,
    @Headers('idempotency-key') key: string | undefined,
  ) {
    // The gate's own way of opening its transaction: on PostgreSQL the BEGIN travels with the
    // claim and the COMMIT with the completed record (three round trips, as the gate's).
    return this.db.inGateTransaction(async () => {
      const exec = this.db.exec();
      const sql = this.db.dialect.idempotency;
      const scope = 'bench|floor';
      const k = key ?? randomUUID();
      const answer = (body: { id: string }) => {
        const encoded = encodeSnapshot({
          status: 201,
          headers: [
            ['content-type', 'application/json; charset=utf-8'],
            ['location', `/payments/${body.id}`],
          ],
          body: Buffer.from(JSON.stringify(body)),
        });
        return { status: 201, headers: encoded.headers, body: encoded.body, ttlMs: DAY_MS };
      };
      // The ledger statements the gate issues for a first execution on this database: the single
      // write (claim, then insert the completed record) where the dialect has it, else reserve
      // then complete.
      if (sql.singleWrite) {
        const claimed = await sql.singleWrite.claim(exec, { scope, key: k, lockTimeoutMs: 1000 });
        if (claimed.locked || claimed.row) throw new ConflictException('floor: key already used');
        const body = await this.create(dto, res);
        await sql.singleWrite.insertCompleted(exec, {
          scope,
          key: k,
          requestHash: FLOOR_HASH,
          ...answer(body),
        });
        return body;
      }
      const leaseToken = randomUUID();
      const reserved = await sql.reserve(exec, {
        scope,
        key: k,
        requestHash: FLOOR_HASH,
        leaseToken,
        leaseMs: 60_000,
        ttlMs: DAY_MS,
        lockTimeoutMs: 1000,
      });
      if (reserved.outcome !== 'inserted') throw new ConflictException('floor: key already used');
      const body = await this.create(dto, res);
      await sql.complete(exec, {
        id: reserved.id,
        leaseToken,
        sameTransaction: true,
        ...answer(body),
      });
      return body;
    });
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

const DAY_MS = 86_400_000;
const FLOOR_HASH = Buffer.alloc(32, 7);

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
