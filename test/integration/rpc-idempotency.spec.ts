import { Controller, type INestMicroservice, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  type ClientProxy,
  ClientProxyFactory,
  EventPattern,
  Transport,
} from '@nestjs/microservices';
import * as amqp from 'amqplib';
import { randomUUID } from 'node:crypto';
import { lastValueFrom } from 'rxjs';
import type { DataSource } from 'typeorm';
import { Idempotent } from '../../lib';
import { PROBLEM_TYPES } from '../../lib/problem-details';
import { InboxFixtureModule } from '../fixtures/inbox/inbox-fixture.module';
import {
  rpcPaymentsController,
  RUNS,
  type RpcPayCommand,
} from '../fixtures/rpc/rpc-payments.controller';
import {
  closeTestDatabase,
  createTestDatabase,
  databaseKinds,
  openTestDatabase,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { freePort } from '../support/free-port';
import { NATS_URL, RABBIT_URL } from '../fixtures/outbox/rabbit-collector';
import { keyedRecord } from '../fixtures/rpc/keyed-record';

const REDIS_URL = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

type TransportName = 'nats' | 'rabbitmq' | 'tcp' | 'redis';

/** A server and a client of one transport, and how a request carries its key. */
interface Wire {
  server: any;
  client: ClientProxy;
  /** The request as the transport sends it with `key` (a header, or in the payload for TCP). */
  record(cmd: RpcPayCommand, key: string | undefined): unknown;
  keyFrom?: (data: RpcPayCommand) => string | undefined;
}

async function wireOf(transport: TransportName): Promise<Wire> {
  switch (transport) {
    case 'nats': {
      const queue = `rpc-test-${randomUUID()}`;
      const options = { servers: [NATS_URL], queue };
      return {
        server: { transport: Transport.NATS, options },
        client: ClientProxyFactory.create({ transport: Transport.NATS, options }),
        record: (cmd, key) => keyedRecord('nats', cmd, key),
      };
    }
    case 'rabbitmq': {
      const queue = `rpc-test-${randomUUID()}`;
      const options = { urls: [RABBIT_URL], queue, queueOptions: { durable: false } };
      return {
        // noAck: false, as the sample app: Nest acknowledges no request itself; the gate must.
        server: { transport: Transport.RMQ, options: { ...options, noAck: false } },
        client: ClientProxyFactory.create({ transport: Transport.RMQ, options }),
        record: (cmd, key) => keyedRecord('rabbitmq', cmd, key),
      };
    }
    case 'tcp': {
      const port = await freePort();
      const options = { host: '127.0.0.1', port };
      return {
        server: { transport: Transport.TCP, options },
        client: ClientProxyFactory.create({ transport: Transport.TCP, options }),
        record: (cmd, key) => ({ ...cmd, requestId: key }),
        keyFrom: (data) => data.requestId,
      };
    }
    case 'redis': {
      // Nest's Redis transport carries no headers: the key is in the payload, read by keyFrom.
      const options = { host: REDIS_URL.hostname, port: Number(REDIS_URL.port || 6379) };
      return {
        server: { transport: Transport.REDIS, options },
        client: ClientProxyFactory.create({ transport: Transport.REDIS, options }),
        record: (cmd, key) => ({ ...cmd, requestId: key }),
        keyFrom: (data) => data.requestId,
      };
    }
  }
}

/** Transports, and the mode each runs in (leased once, over TCP: its lease path). */
const TRANSPORTS: Array<[TransportName, 'transactional' | 'leased']> = [
  ['nats', 'transactional'],
  ['rabbitmq', 'transactional'],
  ['tcp', 'transactional'],
  ['tcp', 'leased'],
  ['redis', 'transactional'],
];

describe.each(databaseKinds())('@Idempotent() on @MessagePattern, %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    ({ db, ds } = await openTestDatabase(kind));
  }, 300_000);

  afterAll(() => closeTestDatabase({ ds, db }));

  const effects = async (note: string): Promise<number> => {
    const rows = await ds.query(
      `SELECT id FROM inbox_effects WHERE note = ${placeholder(kind, 0)}`,
      [note],
    );
    return rows.length;
  };

  describe.each(TRANSPORTS)('over %s, %s mode', (transport, mode) => {
    const pattern = `rpc.pay.${randomUUID()}`;
    let app: INestMicroservice;
    let wire: Wire;

    beforeAll(async () => {
      wire = await wireOf(transport);
      app = await NestFactory.createMicroservice(
        InboxFixtureModule.register({
          dbUrl: db.url,
          controllers: [
            rpcPaymentsController(pattern, { keyFrom: wire.keyFrom, mode, leaseMs: 2000 }),
          ],
        }),
        { ...wire.server, logger: false },
      );
      await app.listen();
      await wire.client.connect();
    }, 300_000);

    afterAll(async () => {
      await wire?.client.close();
      await app?.close();
      if (transport === 'rabbitmq') {
        // Every request was acknowledged: with the server gone, none went back to the queue.
        const conn = await amqp.connect(RABBIT_URL);
        const ch = await conn.createChannel();
        const { messageCount } = await ch.checkQueue(wire.server.options.queue);
        await ch.deleteQueue(wire.server.options.queue);
        await conn.close();
        expect(messageCount).toBe(0);
      }
    });

    const send = (cmd: RpcPayCommand, key: string | undefined) =>
      lastValueFrom(wire.client.send(pattern, wire.record(cmd, key)));
    /** The error a request answers (it must fail). */
    const failure = async (cmd: RpcPayCommand, key: string | undefined): Promise<any> => {
      try {
        await send(cmd, key);
      } catch (e) {
        return e;
      }
      throw new Error('the request succeeded');
    };

    it('a duplicate request gets the same reply; the handler runs once', async () => {
      const note = randomUUID();
      const key = randomUUID();
      const first = await send({ amount: 10, note }, key);
      const second = await send({ amount: 10, note }, key);
      expect(second).toEqual(first);
      expect(first).toMatchObject({ amount: 10, id: expect.any(String) });
      expect(await effects(note)).toBe(1);
      // Another key is another request.
      const other = await send({ amount: 10, note }, randomUUID());
      expect(other.id).not.toBe(first.id);
      expect(await effects(note)).toBe(2);
    });

    it('the key reused with other data: a 422 problem, nothing run', async () => {
      const note = randomUUID();
      const key = randomUUID();
      await send({ amount: 10, note }, key);
      const err = await failure({ amount: 11, note }, key);
      expect(err).toMatchObject({
        type: PROBLEM_TYPES.mismatch,
        status: 422,
        retryable: false,
        title: expect.any(String),
      });
      expect(await effects(note)).toBe(1);
    });

    it('no key: a 400 problem naming where the key goes, nothing run', async () => {
      const note = randomUUID();
      const err = await failure({ amount: 10, note }, undefined);
      expect(err).toMatchObject({ type: PROBLEM_TYPES.keyMissing, status: 400 });
      expect(await effects(note)).toBe(0);
      const bad = await failure({ amount: 10, note }, 'bad\u0001key');
      expect(bad).toMatchObject({ type: PROBLEM_TYPES.keyInvalid, status: 400 });
      expect(await effects(note)).toBe(0);
    });

    it('the handler throws: its error reaches the caller, its writes roll back, the key stays free', async () => {
      const note = randomUUID();
      const key = randomUUID();
      await expect(send({ amount: 3, note, fail: true }, key)).rejects.toMatchObject({
        message: 'declined',
      });
      expect(await effects(note)).toBe(0);
      // A problem thrown by the handler reaches the caller as the problem (not a crash of the filter).
      await expect(send({ amount: 3, note, problem: true }, key)).rejects.toMatchObject({
        type: 'urn:test:declined',
        status: 402,
      });
      expect(await effects(note)).toBe(0);
      const reply = await send({ amount: 3, note }, key);
      expect(reply).toMatchObject({ amount: 3 });
      expect(await effects(note)).toBe(1);
    });

    it('a duplicate while the first runs: a retryable 409 problem with retryAfter, nothing run twice', async () => {
      // Every connection of the app's pool (10) opened first, each by a request holding it in its
      // transaction: on Babelfish a new connection's first batch starts about a second late, so a
      // duplicate sent on a cold one could reach the key after the first committed (a replay,
      // also correct, but not what this test proves).
      const warm = randomUUID();
      await Promise.all(
        Array.from({ length: 10 }, () =>
          send({ amount: 1, note: warm, delayMs: 300 }, randomUUID()),
        ),
      );
      const note = randomUUID();
      const key = randomUUID();
      const first = send({ amount: 6, note, delayMs: 1500 }, key);
      // The first is in its handler (this process runs the app): its record is in flight.
      while (!RUNS.get(note)) await new Promise((r) => setTimeout(r, 10));
      const err = await failure({ amount: 6, note, delayMs: 1500 }, key);
      expect(err).toMatchObject({
        type: PROBLEM_TYPES.inProgress,
        status: 409,
        retryable: true,
        retryAfter: expect.any(Number),
      });
      expect(err.retryAfter).toBeGreaterThan(0);
      const reply = await first;
      expect(reply).toMatchObject({ amount: 6 });
      expect(RUNS.get(note)).toBe(1);
      // Once it has committed, the retry replays it.
      expect(await send({ amount: 6, note, delayMs: 1500 }, key)).toEqual(reply);
      expect(RUNS.get(note)).toBe(1);
      expect(await effects(note)).toBe(1);
    });

    it('concurrent duplicates: one execution; the others replay it or get a retryable 409', async () => {
      const note = randomUUID();
      const key = randomUUID();
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, () => send({ amount: 5, note, delayMs: 400 }, key)),
      );
      const replies = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
      const errors = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
      expect(replies.length).toBeGreaterThanOrEqual(1);
      for (const r of replies) expect(r).toEqual(replies[0]);
      for (const e of errors) {
        expect(e).toMatchObject({
          type: PROBLEM_TYPES.inProgress,
          status: 409,
          retryable: true,
          retryAfter: expect.any(Number),
        });
      }
      expect(await effects(note)).toBe(1);
      // Once the first has committed, a retry replays it.
      expect(await send({ amount: 5, note, delayMs: 400 }, key)).toEqual(replies[0]);
      expect(await effects(note)).toBe(1);
    });
  });
});

describe('@Idempotent() wiring mistakes fail at boot', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
  });
  afterAll(() => db?.drop());

  const boot = async (controller: any) => {
    const app = await NestFactory.create(
      InboxFixtureModule.register({ dbUrl: db.url, controllers: [controller] }),
      { logger: false, abortOnError: false },
    );
    try {
      await app.init();
    } finally {
      await app.close();
    }
  };

  it('on an @EventPattern handler: names @IdempotentConsumer()', async () => {
    @Controller()
    class Events {
      @EventPattern('rpc.some-event')
      @Idempotent()
      handle() {}
    }
    await expect(boot(Events)).rejects.toThrow(/Events\.handle\(\).*@IdempotentConsumer\(\)/);
  });

  it('keyFrom on an HTTP route: names keyResolver', async () => {
    @Controller('k')
    class Routes {
      @Post()
      @Idempotent({ keyFrom: (d: any) => d.id })
      create() {}
    }
    await expect(boot(Routes)).rejects.toThrow(/Routes\.create\(\).*keyResolver/);
  });
});

describe.each(databaseKinds())('@Idempotent() on @MessagePattern with a key ring, %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  const pattern = `rpc.pay.sealed.${randomUUID()}`;
  const ring = (...ids: string[]) => ({
    keys: ids.map((id) => ({ id, key: Buffer.alloc(32, id.charCodeAt(1)) })),
  });

  beforeAll(async () => {
    ({ db, ds } = await openTestDatabase(kind));
  }, 300_000);

  afterAll(() => closeTestDatabase({ ds, db }));

  /** A TCP server guarding `pattern` under `encryption`, and a client; closed by `stop()`. */
  const serve = async (encryption: ReturnType<typeof ring>) => {
    const wire = await wireOf('tcp');
    const app = await NestFactory.createMicroservice(
      InboxFixtureModule.register({
        dbUrl: db.url,
        idempotency: { encryption },
        controllers: [rpcPaymentsController(pattern, { keyFrom: wire.keyFrom })],
      }),
      { ...wire.server, logger: false },
    );
    await app.listen();
    await wire.client.connect();
    return {
      send: (cmd: RpcPayCommand, key: string) =>
        lastValueFrom(wire.client.send(pattern, wire.record(cmd, key))),
      stop: async () => {
        await wire.client.close();
        await app.close();
      },
    };
  };

  it('the stored reply is sealed (no plaintext at rest), replayed under the ring, refused once its key id is gone', async () => {
    const note = `sealed-${randomUUID()}`;
    const key = randomUUID();
    const k1 = await serve(ring('k1'));
    let first: any;
    try {
      first = await k1.send({ amount: 7, note }, key);
      expect(await k1.send({ amount: 7, note }, key)).toEqual(first);
    } finally {
      await k1.stop();
    }
    // Neither the reply's payment id nor its note is in the stored record's bytes.
    const rows = await ds.query(
      `SELECT response_body AS body, response_headers AS headers FROM idempotency_records`,
    );
    const stored = rows
      .map((r: any) => `${Buffer.from(r.body ?? '').toString('latin1')} ${r.headers ?? ''}`)
      .join('\n');
    expect(rows.length).toBeGreaterThan(0);
    expect(stored).not.toContain(note);
    expect(stored).not.toContain(first.id);

    // k2 first, k1 still in the ring: the k1 reply is replayed.
    const both = await serve(ring('k2', 'k1'));
    try {
      expect(await both.send({ amount: 7, note }, key)).toEqual(first);
    } finally {
      await both.stop();
    }
    // k1 gone: the retry is refused with a problem naming k1, and the handler does not run again.
    const k2 = await serve(ring('k2'));
    try {
      const e: any = await k2.send({ amount: 7, note }, key).then(
        () => undefined,
        (err) => err,
      );
      expect(e).toMatchObject({
        type: PROBLEM_TYPES.storedResponseKeyUnknown,
        status: 500,
      });
      expect(JSON.stringify(e)).toContain('k1');
    } finally {
      await k2.stop();
    }
    const effects = await ds.query(
      `SELECT id FROM inbox_effects WHERE note = ${placeholder(kind, 0)}`,
      [note],
    );
    expect(effects.length).toBe(1);
  });
});
