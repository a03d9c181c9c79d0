import * as amqp from 'amqplib';
import type { DataSource } from 'typeorm';
import { placeholder, type TestDatabaseKind } from '../../support/databases';
import type { AppProcess } from '../../support/sample-app';
import { RABBIT_URL } from './fault-cluster';

/** An outbox row as the relay would publish it. */
export interface StoredEvent {
  id: string;
  type: string;
  payload: string;
  partitionKey: string | null;
  headers: string | null;
}

/** The `payment.captured` rows of the outbox whose payload names a customer id starting with `prefix`. */
export async function storedEvents(
  ds: DataSource,
  kind: TestDatabaseKind['name'],
  prefix: string,
): Promise<StoredEvent[]> {
  const rows: Array<Record<string, string | null>> = await ds.query(
    `SELECT id, type, payload, partition_key AS pk, headers FROM outbox_messages
      WHERE type = 'payment.captured' AND payload LIKE ${placeholder(kind, 0)}`,
    [`%"customerId":"${prefix}%`],
  );
  return rows.map((r) => ({
    id: String(r.id),
    type: String(r.type),
    payload: String(r.payload),
    partitionKey: r.pk,
    headers: r.headers,
  }));
}

/**
 * Publishes an outbox event straight to RabbitMQ, the way the relay's ClientProxyPublisher does
 * (Nest's `{ pattern, data }` packet, AMQP `messageId` = the outbox message id, the relay's
 * headers, persistent): what a broker redelivery or a relay republish looks like to a consumer.
 */
export async function publishCopies(
  queue: string,
  events: StoredEvent[],
  copies: number,
): Promise<number> {
  const conn = await amqp.connect(RABBIT_URL);
  try {
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(queue, { durable: true });
    const sends: Array<() => void> = [];
    for (const e of events) {
      const headers: Record<string, string> = {
        ...(e.headers ? JSON.parse(e.headers) : {}),
        'message-id': e.id,
        'message-type': e.type,
        ...(e.partitionKey ? { 'partition-key': e.partitionKey } : {}),
      };
      const content = Buffer.from(JSON.stringify({ pattern: e.type, data: JSON.parse(e.payload) }));
      for (let i = 0; i < copies; i++) {
        sends.push(() =>
          ch.sendToQueue(queue, content, {
            messageId: e.id,
            type: e.type,
            headers,
            persistent: true,
            contentType: 'application/json',
          }),
        );
      }
    }
    // Copies of one message interleave with everything else, so consumers on several processes
    // get them at the same moment as well as later.
    for (let i = sends.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [sends[i], sends[j]] = [sends[j], sends[i]];
    }
    for (const send of sends) send();
    await ch.waitForConfirms();
    return sends.length;
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/** Sum of a counter of the ledger consumer over the processes' `/metrics` (Prometheus text). */
export async function consumerCounter(processes: AppProcess[], metric: string): Promise<number> {
  let total = 0;
  for (const p of processes) {
    const text = await (await fetch(`${p.url}/metrics`)).text();
    for (const line of text.split('\n')) {
      if (line.startsWith(metric) && line.includes('consumer="ledger"')) {
        total += Number(line.trim().split(/\s+/).pop());
      }
    }
  }
  return total;
}
