import { numberFromEnv } from '../config/sample.config';

/** DI token of the ledger consumer's demo switches. */
export const LEDGER_DEMO = Symbol('LedgerDemoSwitches');

/**
 * Demo switches of the ledger consumer, from the environment, to watch the inbox work:
 * - LEDGER_DEMO_FAIL_ATTEMPTS=n: the first n runs of each message's handler in this process
 *   throw after writing the entry (it rolls back; the transport redelivers, the inbox counts
 *   the attempt);
 * - LEDGER_DEMO_DELAY_MS=ms: the handler holds its transaction open this long (kill the process
 *   meanwhile to see the broker redeliver).
 */
export interface LedgerDemoSwitches {
  failAttempts: number;
  delayMs: number;
}

export function ledgerDemoFromEnv(): LedgerDemoSwitches {
  return {
    failAttempts: numberFromEnv('LEDGER_DEMO_FAIL_ATTEMPTS') ?? 0,
    delayMs: numberFromEnv('LEDGER_DEMO_DELAY_MS') ?? 0,
  };
}
