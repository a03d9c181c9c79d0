import { Logger } from '@nestjs/common';
import * as amqp from 'amqplib';
import type { BrokerConfig } from './broker.config';
import { consumerServices, fanOutExchange } from './consumer-services';

const DECLARE_TIMEOUT_MS = 5000;

/**
 * Declares the RabbitMQ fan-out before the relay's first publish: the durable fanout exchange
 * (BROKER_EXCHANGE) and every consuming service's durable queue bound to it. A fanout exchange
 * drops what it cannot route, so the publishing side declares the bindings too: an event
 * published before a service's consumers first connect waits in that service's queue instead
 * of being lost. (Each service's consumers declare the same on connect; the declarations are
 * idempotent.) A broker unreachable at boot is not fatal here: the consumers bind their own
 * queues as they connect.
 */
export async function declareRabbitFanOut(
  config: Extract<BrokerConfig, { kind: 'rabbitmq' }>,
): Promise<void> {
  const exchange = fanOutExchange(config);
  let connection: amqp.ChannelModel | undefined;
  const timer = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error('timed out')), DECLARE_TIMEOUT_MS).unref(),
  );
  try {
    connection = await Promise.race([amqp.connect(config.url), timer]);
    connection.on('error', () => undefined);
    const channel = await connection.createChannel();
    await channel.assertExchange(exchange, 'fanout', { durable: true });
    for (const service of consumerServices(config)) {
      await channel.assertQueue(service.queue, { durable: true });
      await channel.bindQueue(service.queue, exchange, '');
    }
  } catch (e) {
    new Logger('Messaging').warn(
      `could not declare the fan-out on RabbitMQ now (${e instanceof Error ? e.message : String(e)}); each service's consumers bind their queue to "${exchange}" when they connect`,
    );
  } finally {
    await connection?.close().catch(() => undefined);
  }
}
