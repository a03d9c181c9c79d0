import {
  ClientNats,
  ClientProxy,
  ClientRMQ,
  type ReadPacket,
  type WritePacket,
} from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import {
  ClientProxyPublisher,
  FunctionPublisher,
  isConnectionError,
  OutboxPublishTimeoutError,
  PublisherUnavailableError,
  ServiceBusPublisher,
} from '../../lib';
import type { OutboxMessage, OutboxPublisher, ServiceBusSenderLike } from '../../lib';
import { isPublisherUnavailable } from '../../lib/outbox/outbox-unavailable';

/** A ClientProxy whose `status` the test sets and whose emits fail with the error it is given. */
class StatusClient extends ClientProxy {
  failWith: unknown;
  async connect(): Promise<void> {}
  async close(): Promise<void> {}
  unwrap<T>(): T {
    return undefined as T;
  }
  setStatus(status: string): void {
    (this as unknown as { _status$: { next(s: string): void } })._status$.next(status);
  }
  protected publish(_packet: ReadPacket, _callback: (packet: WritePacket) => void): () => void {
    throw new Error('not used');
  }
  protected async dispatchEvent<T = any>(_packet: ReadPacket): Promise<T> {
    if (this.failWith !== undefined) throw this.failWith;
    return undefined as T;
  }
}

const message = (): OutboxMessage => {
  const id = randomUUID();
  return {
    id,
    type: 'payment.captured',
    payload: {},
    headers: { 'message-id': id },
    partitionKey: null,
    seq: '1',
    attempts: 0,
    createdAt: new Date(),
  };
};

const withCode = (text: string, code: string) => Object.assign(new Error(text), { code });
const named = (text: string, name: string) => Object.assign(new Error(text), { name });
const timeout = () => new OutboxPublishTimeoutError('not confirmed in 1500 ms');

/** What the relay decides for an error this publisher failed with. */
const counts = (publisher: OutboxPublisher, error: Error) =>
  isPublisherUnavailable(publisher, error) ? 'no attempt (broker unreachable)' : 'attempt';

describe('which failed publishes count as attempts', () => {
  describe('isConnectionError (the default of every built-in publisher)', () => {
    it.each([
      ['a refused connection', withCode('connect ECONNREFUSED 127.0.0.1:5672', 'ECONNREFUSED')],
      ['a reset connection', withCode('read ECONNRESET', 'ECONNRESET')],
      ['a DNS failure', withCode('getaddrinfo ENOTFOUND broker', 'ENOTFOUND')],
      [
        'a refusal inside an AggregateError (Node tries every address)',
        new AggregateError([withCode('connect ECONNREFUSED ::1:5672', 'ECONNREFUSED')], ''),
      ],
      [
        'a refusal as the cause',
        new Error('publish failed', { cause: withCode('x', 'ECONNREFUSED') }),
      ],
      [
        "ClientRMQ's rejection while it reconnects",
        new Error(String('Error: Connection lost. Trying to reconnect...')),
      ],
      ["amqplib's closed connection", new Error('Connection closed: 320 (CONNECTION-FORCED)')],
      [
        "amqplib's channel of a lost connection",
        new Error('Channel ended, no reply will be forthcoming'),
      ],
      ["amqplib's publish on a closed channel", new Error('Channel closed')],
      [
        "amqplib's connection cut while opening",
        new Error('Socket closed abruptly during opening handshake'),
      ],
      ['a NATS connection closed', withCode('connection closed', 'CONNECTION_CLOSED')],
      ['a NATS disconnect', withCode('disconnect', 'DISCONNECT')],
      [
        'a kafkajs connection error',
        named('Connection error: connect ECONNREFUSED', 'KafkaJSConnectionError'),
      ],
      ['a kafkajs broker not found', named('no broker', 'KafkaJSBrokerNotFound')],
      ['Service Bus unreachable', withCode('communication problem', 'ServiceCommunicationProblem')],
      ['Service Bus busy', withCode('busy', 'ServiceBusy')],
      ['a Service Bus entity full', withCode('quota', 'QuotaExceeded')],
    ])('%s: no attempt', (_, error) => {
      expect(isConnectionError(error)).toBe(true);
    });

    it.each([
      ['a plain refusal', new Error('broker refused')],
      [
        'a channel closed by the server for the message (406)',
        new Error(
          'Channel closed by server: 406 (PRECONDITION-FAILED) with message "PRECONDITION_FAILED - message size 200000000 is larger than configured max size 134217728"',
        ),
      ],
      ['a bug in a mapping', new TypeError("Cannot read properties of undefined (reading 'id')")],
      ['a Service Bus message too large', withCode('too large', 'MessageSizeExceeded')],
      ['a Service Bus entity not found', withCode('no such queue', 'MessagingEntityNotFound')],
      ['a kafkajs message too large', named('too large', 'KafkaJSProtocolError')],
      ['a publish time-out', timeout()],
    ])('%s: an attempt', (_, error) => {
      expect(isConnectionError(error)).toBe(false);
    });
  });

  describe('a custom publisher (the port)', () => {
    const bare: OutboxPublisher = { publish: async () => undefined };

    it('PublisherUnavailableError, thrown or as a cause, is never an attempt', () => {
      expect(counts(bare, new PublisherUnavailableError('webhook down'))).toBe(
        'no attempt (broker unreachable)',
      );
      const wrapped = new Error('outer', { cause: new PublisherUnavailableError('down') });
      expect(counts({ ...bare, isUnavailable: () => false }, wrapped)).toBe(
        'no attempt (broker unreachable)',
      );
    });

    it('without isUnavailable(): connection errors are no attempt, the rest are', () => {
      expect(counts(bare, withCode('x', 'ECONNREFUSED'))).toBe('no attempt (broker unreachable)');
      expect(counts(bare, new Error('422 from the webhook'))).toBe('attempt');
      expect(counts(bare, timeout())).toBe('attempt');
    });

    it('its isUnavailable() decides; one that throws counts an attempt (a message cannot stall the relay)', () => {
      const p: OutboxPublisher = { ...bare, isUnavailable: (e) => e.message.startsWith('503') };
      expect(counts(p, new Error('503 Service Unavailable'))).toBe(
        'no attempt (broker unreachable)',
      );
      expect(counts(p, withCode('x', 'ECONNREFUSED'))).toBe('attempt');
      const broken: OutboxPublisher = {
        ...bare,
        isUnavailable: () => {
          throw new Error('classifier bug');
        },
      };
      expect(counts(broken, withCode('x', 'ECONNREFUSED'))).toBe('attempt');
    });
  });

  describe('ClientProxyPublisher', () => {
    it('a failure or a time-out while the client says it is not connected is no attempt', async () => {
      const client = new StatusClient();
      const publisher = new ClientProxyPublisher(client, { transport: 'rmq' });
      client.setStatus('connected');
      client.failWith = new Error('broker refused');
      const [refused] = await publisher.publishBatch([message()]);
      expect(counts(publisher, refused!)).toBe('attempt');
      expect(counts(publisher, timeout())).toBe('attempt');
      for (const status of ['disconnected', 'reconnecting', 'blocked', 'crashed']) {
        client.setStatus(status);
        expect([status, counts(publisher, timeout())]).toEqual([
          status,
          'no attempt (broker unreachable)',
        ]);
      }
      client.setStatus('unblocked');
      expect(counts(publisher, timeout())).toBe('attempt');
    });

    it("keeps ClientRMQ's string and { err, url } rejections readable and classified", async () => {
      const client = new StatusClient();
      const publisher = new ClientProxyPublisher(client, { transport: 'rmq' });
      client.failWith = 'Error: Connection lost. Trying to reconnect...';
      const [lost] = await publisher.publishBatch([message()]);
      expect(lost!.message).toBe('Error: Connection lost. Trying to reconnect...');
      expect(counts(publisher, lost!)).toBe('no attempt (broker unreachable)');
      client.failWith = {
        err: withCode('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
        url: 'amqp://guest:secret@127.0.0.1:1',
      };
      const [refused] = await publisher.publishBatch([message()]);
      expect(refused!.message).toBe('connect ECONNREFUSED 127.0.0.1:1 (amqp://***@127.0.0.1:1)');
      expect(counts(publisher, refused!)).toBe('no attempt (broker unreachable)');
    });

    it('a real ClientRMQ with no broker behind its URL: no attempt', async () => {
      const client = new ClientRMQ({
        urls: ['amqp://guest:guest@127.0.0.1:1'],
        queue: `unavailable-${randomUUID()}`,
      });
      const publisher = new ClientProxyPublisher(client as unknown as ClientProxy);
      try {
        const [outcome] = await publisher.publishBatch([message()]);
        expect(outcome).toBeInstanceOf(Error);
        expect(outcome!.message).toMatch(/ECONNREFUSED/);
        expect(counts(publisher, outcome!)).toBe('no attempt (broker unreachable)');
      } finally {
        await client.close();
      }
    });

    it('a real ClientNats with no server behind its URL: no attempt', async () => {
      const client = new ClientNats({ servers: ['nats://127.0.0.1:1'] });
      const publisher = new ClientProxyPublisher(client as unknown as ClientProxy);
      try {
        const [outcome] = await publisher.publishBatch([message()]);
        expect(outcome).toBeInstanceOf(Error);
        expect(counts(publisher, outcome!)).toBe('no attempt (broker unreachable)');
      } finally {
        await client.close().catch(() => undefined);
      }
    });

    it('the isUnavailable option overrides the default, undefined falls back to it', () => {
      const client = new StatusClient();
      const strict = new ClientProxyPublisher(client, {
        transport: 'plain',
        isUnavailable: (e) => (e.message === 'ours' ? true : undefined),
      });
      expect(counts(strict, new Error('ours'))).toBe('no attempt (broker unreachable)');
      expect(counts(strict, withCode('x', 'ECONNRESET'))).toBe('no attempt (broker unreachable)');
      expect(counts(strict, new Error('refused'))).toBe('attempt');
      const never = new ClientProxyPublisher(client, {
        transport: 'plain',
        isUnavailable: () => false,
      });
      expect(counts(never, withCode('x', 'ECONNRESET'))).toBe('attempt');
    });
  });

  describe('ServiceBusPublisher', () => {
    const sender = (error: Error): ServiceBusSenderLike => ({
      sendMessages: async () => {
        throw error;
      },
      createMessageBatch: async () => {
        throw error;
      },
    });

    it('service-wide codes are no attempt, message codes are', async () => {
      const unreachable = Object.assign(new Error('ServiceCommunicationProblem'), {
        name: 'ServiceBusError',
        code: 'ServiceCommunicationProblem',
      });
      const p = new ServiceBusPublisher(sender(unreachable));
      await expect(p.publish(message())).rejects.toBe(unreachable);
      expect(counts(p, unreachable)).toBe('no attempt (broker unreachable)');
      const tooLarge = Object.assign(new Error('too large'), {
        name: 'ServiceBusError',
        code: 'MessageSizeExceeded',
      });
      expect(counts(new ServiceBusPublisher(sender(tooLarge)), tooLarge)).toBe('attempt');
      expect(counts(p, timeout())).toBe('attempt');
      const custom = new ServiceBusPublisher(sender(tooLarge), { isUnavailable: () => true });
      expect(counts(custom, tooLarge)).toBe('no attempt (broker unreachable)');
    });
  });

  describe('FunctionPublisher', () => {
    it('a transport error thrown by the function is no attempt; its own refusal is one', async () => {
      const fn = new FunctionPublisher(async () => {
        throw withCode('connect ECONNREFUSED 10.0.0.1:443', 'ECONNREFUSED');
      });
      const error = await fn.publish(message()).catch((e: Error) => e);
      expect(counts(fn, error as Error)).toBe('no attempt (broker unreachable)');
      expect(counts(fn, new Error('400 Bad Request'))).toBe('attempt');
      const custom = new FunctionPublisher(async () => undefined, {
        isUnavailable: (e) => (/^5\d\d /.test(e.message) ? true : undefined),
      });
      expect(counts(custom, new Error('503 Service Unavailable'))).toBe(
        'no attempt (broker unreachable)',
      );
      expect(counts(custom, withCode('x', 'ECONNREFUSED'))).toBe('no attempt (broker unreachable)');
      expect(counts(custom, new Error('400 Bad Request'))).toBe('attempt');
    });
  });
});
