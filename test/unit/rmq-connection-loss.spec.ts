import { ClientRMQ, ServerRMQ } from '@nestjs/microservices';
import { EventEmitter } from 'node:events';
import {
  isRmqServer,
  listenToEveryChannel,
  type RmqServerLike,
  settleConsumeReplies,
  watchRmqClient,
  watchRmqServer,
} from '../../lib/internal/rmq-connection-loss';

/**
 * The handlers that keep a RabbitMQ connection lost during a channel's set-up from ending the
 * process (pure logic, on Nest's real ServerRMQ class with a fake connection and channel; the
 * real broker and a real process are in test/e2e/rmq-connection-loss.spec.ts).
 */
const channelEnded = () => new Error('Channel ended, no reply will be forthcoming');

/** An amqplib channel as ServerRMQ#setupChannel uses it, whose consume-ok never comes. */
function lostChannel() {
  return {
    assertQueue: async (queue: string) => ({ queue }),
    prefetch: async () => undefined,
    consume: (_queue: string) => Promise.reject(channelEnded()),
  };
}

describe('settleConsumeReplies', () => {
  it('hands a rejected consume() to the handler and still rejects to whoever awaits it', async () => {
    const channel = lostChannel();
    const seen: string[] = [];
    settleConsumeReplies(channel, (queue, e) => seen.push(`${queue}: ${(e as Error).message}`));
    settleConsumeReplies(channel, () => seen.push('twice'));
    await expect(channel.consume('payments')).rejects.toThrow('Channel ended');
    expect(seen).toEqual(['payments: Channel ended, no reply will be forthcoming']);
  });
});

describe('watchRmqServer on a ServerRMQ', () => {
  // ServerRMQ's `noAck` is protected: the watcher reads it duck-typed.
  const server = () =>
    new ServerRMQ({ urls: ['amqp://127.0.0.1:1'], queue: 'payments' }) as unknown as ServerRMQ &
      RmqServerLike;

  it('is told from other servers', () => {
    expect(isRmqServer(server())).toBe(true);
    expect(isRmqServer({ noAck: true })).toBe(false);
    expect(isRmqServer(undefined)).toBe(false);
  });

  it("settles the consume() ServerRMQ's own set-up does not await, on every connect's channel", async () => {
    const s = server();
    const consumeErrors: string[] = [];
    watchRmqServer(
      s,
      () => undefined,
      (queue) => consumeErrors.push(queue),
    );
    watchRmqServer(
      s,
      () => undefined,
      () => consumeErrors.push('watched twice'),
    );
    for (let connect = 0; connect < 2; connect++) {
      const ready = jest.fn();
      await (
        s as unknown as { setupChannel(c: unknown, cb: () => void): Promise<void> }
      ).setupChannel(lostChannel(), ready);
      expect(ready).toHaveBeenCalled();
    }
    await new Promise((r) => setImmediate(r));
    expect(consumeErrors).toEqual(['payments', 'payments']);
  });

  it("listens to the server's channel for 'error' from its connect on, once per channel", () => {
    const s = server();
    // What ServerRMQ holds once started: amqp-connection-manager's connection, whose first
    // `connect` creates the channel (in ServerRMQ's own listener, which runs first).
    const manager = new EventEmitter();
    const internals = s as unknown as { server: EventEmitter; channel?: EventEmitter };
    internals.server = manager;
    const channel = new EventEmitter();
    manager.on('connect', () => (internals.channel ??= channel));
    const errors: unknown[] = [];
    watchRmqServer(
      s,
      (e) => errors.push(e),
      () => undefined,
    );
    expect(() => channel.emit('error', channelEnded())).toThrow('Channel ended');
    manager.emit('connect');
    manager.emit('connect');
    expect(channel.listenerCount('error')).toBe(1);
    expect(() => channel.emit('error', channelEnded())).not.toThrow();
    expect(errors).toHaveLength(1);
  });
});

/** amqp-connection-manager's connection as ClientRMQ uses it: its wrappers are plain emitters. */
class FakeConnection extends EventEmitter {
  readonly _channels: EventEmitter[] = [];
  createChannel(): EventEmitter {
    const channel = new EventEmitter();
    this._channels.push(channel);
    return channel;
  }
}

describe('listenToEveryChannel', () => {
  it('listens to the channels a connection holds and to those it creates later, once each', () => {
    const connection = new FakeConnection();
    const held = connection.createChannel();
    const errors: string[] = [];
    listenToEveryChannel(connection, (e) => errors.push((e as Error).message));
    listenToEveryChannel(connection, () => errors.push('watched twice'));
    const later = connection.createChannel();
    for (const channel of [held, later]) {
      expect(channel.listenerCount('error')).toBe(1);
      expect(() => channel.emit('error', channelEnded())).not.toThrow();
    }
    expect(errors).toHaveLength(2);
    expect(() => listenToEveryChannel(undefined, () => undefined)).not.toThrow();
  });
});

describe('watchRmqClient on a ClientRMQ', () => {
  /** A ClientRMQ whose connections are fakes (its own connect logic runs as it is). */
  const client = (connections: FakeConnection[]) => {
    const c = new ClientRMQ({ urls: ['amqp://127.0.0.1:1'], queue: 'payments' });
    (c as unknown as { createClient(): FakeConnection }).createClient = () => {
      const connection = new FakeConnection();
      connections.push(connection);
      return connection;
    };
    return c;
  };

  it("listens to both channels ClientRMQ opens on its first connect, and to a new connection's", async () => {
    const connections: FakeConnection[] = [];
    const c = client(connections);
    const errors: unknown[] = [];
    watchRmqClient(c, (e) => errors.push(e));
    watchRmqClient(c, () => errors.push('watched twice'));
    void c.connect();
    connections[0].emit('connect');
    // Nest 11.2 and 12.1: one channel from its `connect` listener, one from its connection stream.
    const opened = connections[0]._channels;
    expect(opened.length).toBeGreaterThanOrEqual(1);
    expect(opened).toContain((c as unknown as { channel: unknown }).channel);
    for (const channel of opened) {
      expect(channel.listenerCount('error')).toBe(1);
      expect(() => channel.emit('error', channelEnded())).not.toThrow();
    }
    expect(errors).toHaveLength(opened.length);
    // A client closed and connected again opens a new connection: watched as well.
    (c as unknown as { client: unknown; channel: unknown }).client = null;
    (c as unknown as { channel: unknown }).channel = null;
    void c.connect();
    connections[1].emit('connect');
    expect(connections[1]._channels.length).toBeGreaterThanOrEqual(1);
    for (const channel of connections[1]._channels) expect(channel.listenerCount('error')).toBe(1);
  });

  it('listens to the channels of a client that connected before it was watched', async () => {
    const connections: FakeConnection[] = [];
    const c = client(connections);
    void c.connect();
    connections[0].emit('connect');
    watchRmqClient(c, () => undefined);
    for (const channel of connections[0]._channels) expect(channel.listenerCount('error')).toBe(1);
  });
});

describe('a close the broker does not answer', () => {
  /** A connection manager whose channel close waits for a Close-Ok that never comes. */
  function silentBroker() {
    const destroyed: string[] = [];
    const manager = {
      closed: false,
      close: async () => {
        manager.closed = true;
      },
      connection: { connection: { stream: { destroy: () => destroyed.push('socket') } } },
    };
    const hangingChannel = { close: () => new Promise<void>(() => undefined), on: () => undefined };
    return { manager, hangingChannel, destroyed };
  }

  it('a ServerRMQ close resolves after the bound: manager closed, socket destroyed, said once', async () => {
    const server = new ServerRMQ({ urls: ['amqp://127.0.0.1:1'], queue: 'q' });
    const { manager, hangingChannel, destroyed } = silentBroker();
    const timedOut: number[] = [];
    watchRmqServer(
      server as unknown as RmqServerLike,
      () => undefined,
      () => undefined,
      (ms) => timedOut.push(ms),
      50,
    );
    // Connected since (the watcher reads the connection when close() is called).
    Object.assign(server, { server: manager, channel: hangingChannel });
    await server.close();
    expect(timedOut).toEqual([50]);
    expect(manager.closed).toBe(true);
    expect(destroyed).toEqual(['socket']);
  });

  it('a ClientRMQ close that completes in time is left alone', async () => {
    const client = new ClientRMQ({ urls: ['amqp://127.0.0.1:1'], queue: 'q' });
    const { manager, destroyed } = silentBroker();
    Object.assign(client, { client: manager, channel: { close: async () => undefined } });
    const timedOut: number[] = [];
    watchRmqClient(
      client,
      () => undefined,
      (ms) => timedOut.push(ms),
      1000,
    );
    await client.close();
    expect(timedOut).toEqual([]);
    expect(destroyed).toEqual([]);
    expect(manager.closed).toBe(true);
  });
});
