import { DEFAULT_BROKER_QUEUE, type BrokerConfig } from './broker.config';

/** Transport id of the ledger service's consumer (`@EventPattern(pattern, LEDGER_SERVICE)`). */
export const LEDGER_SERVICE = Symbol('LedgerService');
/** Transport id of the notifications service's consumer. */
export const NOTIFICATIONS_SERVICE = Symbol('NotificationsService');

export type ConsumerServiceName = 'ledger' | 'notifications';

/**
 * One consuming service: its handlers (those of `@EventPattern(…, transportId)`) and where its
 * copy of the events waits. Each service has its own queue (RabbitMQ, bound to the fan-out
 * exchange) or queue group (NATS): every service gets every event, and the instances of one
 * service compete for its copy.
 */
export interface ConsumerService {
  name: ConsumerServiceName;
  transportId: symbol;
  /** RabbitMQ queue / NATS queue group. */
  queue: string;
}

/**
 * The consuming services of the sample app, from the environment:
 * - the ledger's queue is BROKER_QUEUE (default `payments`), as before;
 * - the notifications service's is NOTIFICATIONS_QUEUE (default `<BROKER_QUEUE>.notifications`).
 */
export function consumerServices(config: BrokerConfig): ConsumerService[] {
  const base = 'queue' in config ? config.queue : DEFAULT_BROKER_QUEUE;
  return [
    { name: 'ledger', transportId: LEDGER_SERVICE, queue: base },
    {
      name: 'notifications',
      transportId: NOTIFICATIONS_SERVICE,
      queue: process.env.NOTIFICATIONS_QUEUE || `${base}.notifications`,
    },
  ];
}

/**
 * The services whose consumers this process runs: CONSUMERS, a comma-separated list of `ledger`
 * and `notifications` (default both; `none` for a process that only serves HTTP and relays).
 */
export function enabledConsumerServices(config: BrokerConfig): ConsumerService[] {
  const raw = (process.env.CONSUMERS ?? 'ledger,notifications').trim();
  const names = raw === 'none' ? [] : raw.split(',').map((s) => s.trim());
  const all = consumerServices(config);
  for (const n of names) {
    if (!all.some((s) => s.name === n)) {
      throw new Error(`CONSUMERS must list ledger and/or notifications (or be none), got "${raw}"`);
    }
  }
  return all.filter((s) => names.includes(s.name));
}

/**
 * The RabbitMQ exchange the relay publishes to: BROKER_EXCHANGE, default `<BROKER_QUEUE>.events`.
 * A fanout exchange; each service's queue is bound to it.
 */
export function fanOutExchange(config: BrokerConfig): string {
  const base = 'queue' in config ? config.queue : DEFAULT_BROKER_QUEUE;
  return process.env.BROKER_EXCHANGE || `${base}.events`;
}
