import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { OnOutboxMessage } from '../../lib';
import type { OutboxHandlerContext, OutboxMessage } from '../../lib';

/** The table the in-process handler writes one row to per message (created by the suite). */
export const IN_PROCESS_EFFECTS_DDL =
  'CREATE TABLE IF NOT EXISTS bench_in_process_effects (message_id VARCHAR(128) NOT NULL)';

let onHandled: (m: OutboxMessage) => void = () => undefined;

/** What the worker counts for each handled message. */
export function setInProcessHook(hook: (m: OutboxMessage) => void): void {
  onHandled = hook;
}

/**
 * The in-process handler of the bench: one insert in its transaction (with the inbox record the
 * library writes there), the smallest effect a real handler has.
 */
@Injectable()
export class BenchInProcessHandler {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @OnOutboxMessage('bench.in-process', { name: 'bench-in-process' })
  async handle(_payload: unknown, { message }: OutboxHandlerContext): Promise<void> {
    await this.txHost.tx.query('INSERT INTO bench_in_process_effects (message_id) VALUES ($1)', [
      message.id,
    ]);
    onHandled(message);
  }
}
