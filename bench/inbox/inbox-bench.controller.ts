import { BadRequestException, Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { InboxService } from '../../lib';
import { BenchEffectEntity } from './inbox-bench.module';

/** How a message is consumed. */
export type ConsumeMode = 'bare' | 'bare-tx' | 'inbox' | 'inbox-duplicate';
const MODES: ConsumeMode[] = ['bare', 'bare-tx', 'inbox', 'inbox-duplicate'];

export interface RunRequest {
  mode: ConsumeMode;
  /** Message ids are `${prefix}-${i}` for i in [0, messages). */
  prefix: string;
  messages: number;
  concurrency: number;
}

export interface RunResult {
  mode: ConsumeMode;
  messages: number;
  elapsedMs: number;
  processed: number;
  duplicates: number;
  errors: number;
  firstError?: string;
}

/**
 * Runs batches of "messages" through the same handler (one INSERT through TransactionHost.tx),
 * in this process, with `concurrency` consumers at once, like a broker consumer with that
 * prefetch, minus the broker (so the figures isolate what the inbox costs):
 * - bare: the handler alone (its INSERT autocommits);
 * - bare-tx: the handler in its own transaction (TransactionHost.withTransaction);
 * - inbox: InboxService.process (claim INSERT + handler INSERT in one transaction);
 * - inbox-duplicate: InboxService.process of ids already processed (claim finds them, handler skipped).
 */
@Controller('bench')
export class InboxBenchController {
  constructor(
    private readonly inbox: InboxService,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  @Get('health')
  health() {
    return { ok: true };
  }

  @Post('run')
  @HttpCode(200)
  async run(@Body() body: RunRequest): Promise<RunResult> {
    const { mode, prefix } = body;
    const messages = Math.floor(Number(body.messages));
    const concurrency = Math.floor(Number(body.concurrency));
    if (
      !MODES.includes(mode) ||
      typeof prefix !== 'string' ||
      !(messages > 0) ||
      !(concurrency > 0)
    ) {
      throw new BadRequestException(
        `mode (${MODES.join(', ')}), prefix, messages > 0 and concurrency > 0 are required`,
      );
    }
    const result: RunResult = {
      mode,
      messages,
      elapsedMs: 0,
      processed: 0,
      duplicates: 0,
      errors: 0,
    };
    const handler = (messageId: string) => () =>
      this.txHost.tx
        .getRepository(BenchEffectEntity)
        .insert({ id: randomUUID(), messageId, note: mode });
    const consume = async (messageId: string) => {
      switch (mode) {
        case 'bare':
          await handler(messageId)();
          result.processed++;
          return;
        case 'bare-tx':
          await this.txHost.withTransaction(handler(messageId));
          result.processed++;
          return;
        default: {
          const r = await this.inbox.process('bench', messageId, handler(messageId));
          if (r.status === 'processed') result.processed++;
          else if (r.status === 'duplicate') result.duplicates++;
        }
      }
    };
    let next = 0;
    const worker = async () => {
      while (next < messages) {
        const i = next++;
        try {
          await consume(`${prefix}-${i}`);
        } catch (e) {
          result.errors++;
          result.firstError ??= (e as Error).message;
        }
      }
    };
    const t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: Math.min(concurrency, messages) }, worker));
    result.elapsedMs = Number(process.hrtime.bigint() - t0) / 1e6;
    return result;
  }
}
