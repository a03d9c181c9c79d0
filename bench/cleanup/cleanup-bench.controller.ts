import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { Idempotent } from '../../lib';
import { CreatePaymentDto } from '../../sample-app/payments/create-payment.dto';
import { PaymentsService } from '../../sample-app/payments/payments.service';
import { cleanupStatementTimes } from './statement-timer.subscriber';
import { TimedCleanupService } from './timed-cleanup';

/** State of the cleanup the suite started in this process. */
interface CleanupRun {
  running: boolean;
  startedAt: number;
  finishedAt?: number;
  runs: number;
  deleted: number;
  error?: string;
}

@Controller('bench')
export class CleanupBenchController {
  private run: CleanupRun | undefined;

  constructor(
    private readonly payments: PaymentsService,
    private readonly cleanup: TimedCleanupService,
  ) {}

  /** The guarded POST under load: the sample app's payment insert behind `@Idempotent()`. */
  @Post('payments')
  @Idempotent()
  async create(@Body() dto: CreatePaymentDto) {
    const p = await this.payments.create(dto, 'bench', { delayMs: 0 });
    return { id: p.id, amount: p.amount, currency: p.currency };
  }

  /** Starts cleanup runs back to back (each: bounded DELETEs up to the time budget) until caught up. */
  @Post('cleanup/start')
  @HttpCode(202)
  start(@Body() body: { batchSize?: number; timeBudgetMs?: number; dutyCycle?: number }) {
    if (this.run?.running) return this.run;
    this.cleanup.reset();
    cleanupStatementTimes.length = 0;
    const run: CleanupRun = { running: true, startedAt: Date.now(), runs: 0, deleted: 0 };
    this.run = run;
    void (async () => {
      try {
        for (;;) {
          const r = await this.cleanup.runOnce({
            batchSize: body.batchSize,
            timeBudgetMs: body.timeBudgetMs,
            dutyCycle: body.dutyCycle,
          });
          run.runs++;
          run.deleted += r.deleted.idempotency + r.deleted.outbox + r.deleted.inbox;
          if (Object.keys(r.errors).length) throw new Error(JSON.stringify(r.errors));
          if (r.caughtUp) break;
        }
      } catch (e) {
        run.error = (e as Error).message;
      } finally {
        run.finishedAt = Date.now();
        run.running = false;
      }
    })();
    return run;
  }

  @Get('cleanup/status')
  status() {
    const t = this.cleanup.timings;
    const done = !this.run?.running;
    return {
      ...this.run,
      statements: {
        count: t.count,
        deleted: t.deleted,
        maxMs: t.maxMs,
        totalMs: t.totalMs,
        durations: done ? t.durations : [],
      },
      execution: {
        count: cleanupStatementTimes.length,
        maxMs: cleanupStatementTimes.reduce((a, b) => Math.max(a, b), 0),
        durations: done ? cleanupStatementTimes : [],
      },
    };
  }

  @Get('health')
  health() {
    return { status: 'ok' };
  }
}
