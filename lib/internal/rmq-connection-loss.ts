/**
 * Two failures of a RabbitMQ connection lost at the wrong moment that Nest's RMQ transport (11.x
 * and 12.x, over amqp-connection-manager 4) leaves with nobody to take them, so that Node ends the
 * whole process:
 * - amqp-connection-manager's ChannelWrapper emits `error` when its setup fails on a (re)connect,
 *   e.g. "Channel ended, no reply will be forthcoming" when the connection drops while the setup
 *   declares its queue. Neither ServerRMQ nor ClientRMQ listens, and an `error` event with no
 *   listener throws.
 * - ServerRMQ#setupChannel starts its consumer with `channel.consume()` and does not wait for it:
 *   when the connection drops before the broker's consume-ok, that promise rejects unhandled.
 * Both were seen in this project's fault suite (a RabbitMQ connection lost during a database
 * outage ended a sample-app process). In both cases the channel is set up again, consumer
 * included, on the next connect; the functions here only make sure the failure is logged.
 *
 * ClientRMQ adds a third: on its first connect it creates two ChannelWrappers (its `connect`
 * listener and its connection stream each call `createChannel()`) and keeps only the second in
 * `channel`. The first is still set up on every reconnect, so it must be listened to as well:
 * `listenToEveryChannel` listens to every wrapper one connection holds or creates.
 * @internal
 */

/**
 * How long a ServerRMQ's or ClientRMQ's `close()` may take before its connection is torn down:
 * amqp-connection-manager closes each channel first, and amqplib waits for the broker's
 * Close-Ok, which a broker that stopped answering (a network that drops packets, a frozen
 * broker) never sends, so `app.close()` (and SIGTERM) would wait for ever.
 */
export const RMQ_CLOSE_TIMEOUT_MS = 5000;

/** The log line of a close that {@link RMQ_CLOSE_TIMEOUT_MS} cut short. */
export const RMQ_CLOSE_TIMED_OUT = (what: string, ms: number) =>
  `RabbitMQ: ${what}.close() did not complete within ${ms} ms (the broker does not answer); ` +
  'its connection was torn down so that shutdown goes on. Unconfirmed messages stay pending in the outbox; unacknowledged deliveries are redelivered.';

/** What a ChannelWrapper (or any emitter) offers for listening. */
interface Emitter {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** The part of an amqplib channel read here. */
interface AmqpChannel {
  consume(queue: string, ...rest: unknown[]): unknown;
}

/** Nest's ServerRMQ (11.x and 12.x) as far as these functions read it. */
export interface RmqServerLike {
  noAck: boolean;
  /** amqp-connection-manager's ChannelWrapper, once the first connection is up. */
  channel?: unknown;
  /** Runs on every connect with the new amqplib channel: declares the queue, starts the consumer. */
  setupChannel(channel: unknown, ...rest: unknown[]): unknown;
  /** Listens to the connection manager's events (queued until the server starts). */
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

const isEmitter = (x: unknown): x is Emitter =>
  !!x && typeof x === 'object' && typeof (x as Emitter).on === 'function';

/** Whether `target` is a ServerRMQ (duck-typed: @nestjs/microservices is an optional peer). */
export const isRmqServer = (target: unknown): target is RmqServerLike =>
  !!target &&
  typeof target === 'object' &&
  typeof (target as RmqServerLike).noAck === 'boolean' &&
  typeof (target as RmqServerLike).setupChannel === 'function' &&
  typeof (target as RmqServerLike).on === 'function';

const listenedChannels = new WeakSet<object>();
const settledChannels = new WeakSet<object>();
const watchedServers = new WeakSet<object>();

/**
 * Listens (once per channel) to a ChannelWrapper's `error` events. Returns whether a listener was
 * added now.
 */
export function listenToChannelErrors(
  channel: unknown,
  onError: (error: unknown) => void,
): boolean {
  if (!isEmitter(channel) || listenedChannels.has(channel)) return false;
  listenedChannels.add(channel);
  channel.on('error', (error: unknown) => onError(error));
  return true;
}

/** amqp-connection-manager's connection, as far as `listenToEveryChannel` reads it. */
interface ChannelManager {
  createChannel(...args: unknown[]): unknown;
  /** The wrappers it holds (a private field of amqp-connection-manager 4; read when present). */
  _channels?: unknown;
}

const watchedManagers = new WeakSet<object>();

/**
 * Listens to the `error` events of every ChannelWrapper of one amqp-connection-manager connection:
 * those it holds now and those created on it from now on (once per connection and per wrapper).
 */
export function listenToEveryChannel(manager: unknown, onError: (error: unknown) => void): void {
  if (!manager || typeof manager !== 'object' || watchedManagers.has(manager)) return;
  const m = manager as ChannelManager;
  const createChannel = m.createChannel;
  if (typeof createChannel !== 'function') return;
  watchedManagers.add(manager);
  m.createChannel = function (this: unknown, ...args: unknown[]) {
    const channel = createChannel.apply(this, args);
    listenToChannelErrors(channel, onError);
    return channel;
  };
  if (Array.isArray(m._channels)) {
    for (const channel of m._channels) listenToChannelErrors(channel, onError);
  }
}

/** Nest's ClientRMQ (11.x and 12.x) as far as `watchRmqClient` reads it. */
interface RmqClientLike {
  /** amqp-connection-manager's connection, once `connect()` has run. */
  client?: unknown;
  /** The ChannelWrapper it publishes on. */
  channel?: unknown;
  /** Opens the amqp-connection-manager connection (called by `connect()`). */
  createClient?: (...args: unknown[]) => unknown;
}

const watchedClients = new WeakSet<object>();

/**
 * Watches a ClientRMQ (once per client, before or after it connects): every ChannelWrapper of
 * every connection it opens has its `error` events listened to from its creation on, and so do
 * the wrappers of a connection it already has.
 */
export function watchRmqClient(
  client: unknown,
  onChannelError: (error: unknown) => void,
  onCloseTimedOut: (timeoutMs: number) => void = () => undefined,
  closeTimeoutMs = RMQ_CLOSE_TIMEOUT_MS,
): void {
  if (!client || typeof client !== 'object' || watchedClients.has(client)) return;
  watchedClients.add(client);
  const c = client as RmqClientLike;
  boundClose(client, () => c.client, closeTimeoutMs, onCloseTimedOut);
  const createClient = c.createClient;
  if (typeof createClient === 'function') {
    // An own property: ClientRMQ#connect calls `this.createClient()` for each new connection.
    c.createClient = function (this: unknown, ...args: unknown[]) {
      const manager = createClient.apply(this, args);
      listenToEveryChannel(manager, onChannelError);
      return manager;
    };
  }
  listenToEveryChannel(c.client, onChannelError);
  listenToChannelErrors(c.channel, onChannelError);
}

/**
 * Gives every `consume()` promise of one amqplib channel a rejection handler. The promise itself is
 * returned unchanged, so a caller that awaits it still sees the rejection.
 */
export function settleConsumeReplies(
  channel: unknown,
  onError: (queue: string, error: unknown) => void,
): void {
  if (!channel || typeof channel !== 'object' || settledChannels.has(channel)) return;
  const c = channel as AmqpChannel;
  const consume = c.consume;
  if (typeof consume !== 'function') return;
  settledChannels.add(channel);
  c.consume = function (this: unknown, queue: string, ...rest: unknown[]) {
    const reply = consume.call(this, queue, ...rest);
    if (reply && typeof (reply as Promise<unknown>).catch === 'function') {
      (reply as Promise<unknown>).catch((error: unknown) => onError(queue, error));
    }
    return reply;
  };
}

/**
 * Watches a ServerRMQ (once per server, from before it starts or later): its ChannelWrapper's
 * `error` events are listened to from the first connect on, and the consumer it starts on each
 * connect has its reply handled.
 */
export function watchRmqServer(
  server: RmqServerLike,
  onChannelError: (error: unknown) => void,
  onConsumeError: (queue: string, error: unknown) => void,
  onCloseTimedOut: (timeoutMs: number) => void = () => undefined,
  closeTimeoutMs = RMQ_CLOSE_TIMEOUT_MS,
): void {
  if (watchedServers.has(server)) return;
  watchedServers.add(server);
  boundClose(
    server,
    () => (server as { server?: unknown }).server,
    closeTimeoutMs,
    onCloseTimedOut,
  );
  const setupChannel = server.setupChannel;
  // An own property: the amqp-connection-manager setup Nest registered calls
  // `this.setupChannel(channel, …)` on every connect, so it finds this one.
  server.setupChannel = function (this: unknown, channel: unknown, ...rest: unknown[]) {
    settleConsumeReplies(channel, onConsumeError);
    return setupChannel.call(this, channel, ...rest);
  };
  // ServerRMQ creates its ChannelWrapper in its own first `connect` listener, which runs before
  // this one; the wrapper can fail no earlier than its first reply from the broker.
  server.on('connect', () => listenToChannelErrors(server.channel, onChannelError));
  listenToChannelErrors(server.channel, onChannelError);
}

/** amqp-connection-manager's connection manager, as far as `boundClose` reads it. */
interface ConnectionManagerLike {
  close?(): Promise<unknown>;
  /** amqplib's ChannelModel of the current connection: `.connection.stream` is its socket. */
  connection?: { connection?: { stream?: { destroy?(): void } } };
}

/**
 * Makes `target.close()` (ServerRMQ, ClientRMQ) resolve within `timeoutMs` whatever the broker
 * does. Past it, the connection manager is closed (no reconnect timer left) and the socket of its
 * current connection destroyed, so the channel closes still pending settle and nothing keeps the
 * process alive; unsent or unconfirmed publishes were already rejected by the channel's close.
 * Messages are not lost: a delivery not yet acknowledged is redelivered by RabbitMQ, and an outbox
 * message not confirmed stays pending.
 */
function boundClose(
  target: object,
  manager: () => unknown,
  timeoutMs: number,
  onTimedOut: (timeoutMs: number) => void,
): void {
  const t = target as { close?: (...args: unknown[]) => Promise<unknown> };
  const close = t.close;
  if (typeof close !== 'function') return;
  // An own property: Nest calls `server.close()` / `client.close()` on shutdown.
  t.close = function (this: unknown, ...args: unknown[]) {
    const m = manager() as ConnectionManagerLike | undefined;
    let timer: NodeJS.Timeout | undefined;
    const closing = Promise.resolve(close.apply(this, args));
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        onTimedOut(timeoutMs);
        void m?.close?.()?.catch?.(() => undefined);
        try {
          m?.connection?.connection?.stream?.destroy?.();
        } catch {
          // already gone
        }
        resolve();
      }, timeoutMs);
      timer.unref?.();
    });
    return Promise.race([closing, deadline]).finally(() => clearTimeout(timer));
  };
}
