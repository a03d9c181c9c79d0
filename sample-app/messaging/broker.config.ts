/**
 * Where the sample app's events go, chosen by BROKER_URL in this one place:
 * - unset (or `embedded`): the embedded default, in process: the relay runs the ledger's and the
 *   notifications service's `@OnOutboxMessage()` handlers (the library's in-process publisher;
 *   no broker to run: `npm start` shows the whole flow in one process);
 * - `amqp://…` / `amqps://…`: RabbitMQ (queue BROKER_QUEUE, default `payments`, durable);
 * - `nats://…`: NATS (consumers in the queue group BROKER_QUEUE);
 * - `kafka://host:port[,host:port…]`: Kafka (topic BROKER_QUEUE, consumer group BROKER_GROUP,
 *   default the topic's name).
 */
export type BrokerConfig =
  | { kind: 'embedded' }
  | { kind: 'rabbitmq'; url: string; queue: string }
  | { kind: 'nats'; url: string; queue: string }
  | { kind: 'kafka'; url: string; brokers: string[]; queue: string; group: string };

export const DEFAULT_BROKER_QUEUE = 'payments';

export function brokerConfigFromEnv(
  url: string | undefined = process.env.BROKER_URL,
  queue = process.env.BROKER_QUEUE,
  group = process.env.BROKER_GROUP,
): BrokerConfig {
  const q = queue || DEFAULT_BROKER_QUEUE;
  if (!url || url === 'embedded') return { kind: 'embedded' };
  if (/^amqps?:\/\//i.test(url)) return { kind: 'rabbitmq', url, queue: q };
  if (/^nats:\/\//i.test(url)) return { kind: 'nats', url, queue: q };
  if (/^kafka:\/\//i.test(url)) {
    const brokers = url
      .slice('kafka://'.length)
      .split(',')
      .map((b) => b.trim().replace(/\/+$/, ''))
      .filter(Boolean);
    if (!brokers.length || brokers.some((b) => !/^[^\s/:]+:\d+$/.test(b))) {
      throw new Error(`BROKER_URL must be kafka://host:port[,host:port…], got "${redact(url)}"`);
    }
    return { kind: 'kafka', url, brokers, queue: q, group: group || q };
  }
  throw new Error(
    `BROKER_URL must be amqp://…, amqps://…, nats://…, kafka://… or unset (embedded transport), got "${redact(url)}"`,
  );
}

/** The transport for log lines (no credentials). */
export function describeBroker(config: BrokerConfig): string {
  switch (config.kind) {
    case 'embedded':
      return 'embedded (in-process @OnOutboxMessage handlers)';
    case 'rabbitmq':
      return `RabbitMQ ${redact(config.url)} queue "${config.queue}"`;
    case 'nats':
      return `NATS ${redact(config.url)} queue group "${config.queue}"`;
    case 'kafka':
      return `Kafka ${config.brokers.join(',')} topic "${config.queue}" consumer group "${config.group}"`;
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, '//***@');
}
