import { Body, Controller, Injectable, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Transactional } from '@nestjs-cls/transactional';
import request from 'supertest';
import { Idempotent, InboxService, OutboxService } from '../../lib';
import { IdempotencyTestingModule, IdempotencyTestKit } from '../../lib/testing';

/**
 * The testing kit (`nestjs-exactly-once/testing`) used as an app's own tests use it: a Nest
 * testing module with a small controller and a service that writes to the outbox, on the kit's
 * in-memory SQLite database, with no server.
 */

@Injectable()
class PaymentsService {
  charges = 0;
  constructor(private readonly outbox: OutboxService) {}

  @Transactional()
  async capture(amount: number): Promise<{ id: string; amount: number }> {
    const id = `pay_${++this.charges}`;
    await this.outbox.add({ type: 'payment.captured', partitionKey: id, payload: { id, amount } });
    return { id, amount };
  }
}

@Controller('payments')
class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  @Post()
  @Idempotent({ ttl: 60_000 })
  capture(@Body() body: { amount: number }) {
    return this.payments.capture(body.amount);
  }
}

describe('nestjs-exactly-once/testing', () => {
  let app: INestApplication;
  let kit: IdempotencyTestKit;
  let payments: PaymentsService;

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [IdempotencyTestingModule.forRoot()],
      controllers: [PaymentsController],
      providers: [PaymentsService],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
    kit = app.get(IdempotencyTestKit);
    payments = app.get(PaymentsService);
  });

  afterEach(async () => {
    await app.close();
  });

  const pay = (key: string, amount = 10) =>
    request(app.getHttpServer()).post('/payments').set('Idempotency-Key', key).send({ amount });

  it('replays a retry, and drainOutbox() returns what the relay published, once', async () => {
    const first = await pay('k-1').expect(201);
    const retry = await pay('k-1').expect(201);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers['idempotency-replayed']).toBe('true');
    expect(payments.charges).toBe(1);

    const published = await kit.drainOutbox();
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({
      type: 'payment.captured',
      payload: { id: first.body.id, amount: 10 },
    });
    expect(await kit.drainOutbox()).toEqual([]);

    expect(await kit.storedKey({ method: 'POST', route: '/payments' }, 'k-1')).toMatchObject({
      state: 'completed',
      responseStatus: 201,
    });
    expect((await kit.storedKeys()).map((r) => r.idempotencyKey)).toEqual(['k-1']);
  });

  it('advancing the clock past the TTL lets the same key run again', async () => {
    await pay('k-ttl').expect(201);
    kit.clock.advance(59_000);
    expect((await pay('k-ttl').expect(201)).headers['idempotency-replayed']).toBe('true');
    expect(payments.charges).toBe(1);
    kit.clock.advance(2_000);
    expect((await pay('k-ttl').expect(201)).headers['idempotency-replayed']).toBeUndefined();
    expect(payments.charges).toBe(2);
  });

  it('a failed publish stays in the outbox until its retry time; the clock brings it due', async () => {
    await pay('k-retry').expect(201);
    kit.publisher.failNext(new Error('broker down'));
    expect(await kit.drainOutbox()).toEqual([]);
    // Backoff: the retry is not due yet.
    expect(await kit.drainOutbox()).toEqual([]);
    kit.clock.advance(60_000);
    expect((await kit.drainOutbox()).map((m) => m.type)).toEqual(['payment.captured']);
  });

  it('shows inbox rows', async () => {
    const inbox = app.get(InboxService);
    let runs = 0;
    await inbox.process('billing', 'msg-1', () => void runs++);
    await inbox.process('billing', 'msg-1', () => void runs++);
    expect(runs).toBe(1);
    expect(await kit.inboxRows({ consumer: 'billing' })).toEqual([
      expect.objectContaining({ consumer: 'billing', messageId: 'msg-1', status: 'processed' }),
    ]);
  });
});

describe('nestjs-exactly-once/testing under NODE_ENV=production', () => {
  const saved = process.env.NODE_ENV;
  afterEach(() => {
    process.env.NODE_ENV = saved;
  });

  it('refuses to build the module, naming why', () => {
    process.env.NODE_ENV = 'production';
    expect(() => IdempotencyTestingModule.forRoot()).toThrow(
      /refuses to run with NODE_ENV=production/,
    );
  });

  it('refuses to load', () => {
    process.env.NODE_ENV = 'production';
    jest.isolateModules(() => {
      expect(() => require('../../lib/testing')).toThrow(/test-only kit/);
    });
  });
});

describe('the root entry', () => {
  it('loads nothing of the testing kit (built dist/, NODE_ENV=production)', () => {
    const { execFileSync } = require('node:child_process') as typeof import('node:child_process');
    const { join } = require('node:path') as typeof import('node:path');
    const root = join(__dirname, '..', '..', 'dist', 'lib', 'index.js');
    const out = execFileSync(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(root)}); console.log(Object.keys(require.cache).filter((f) => /[\\\\/]lib[\\\\/](testing|cli)[\\\\/]/.test(f)).length)`,
      ],
      { env: { ...process.env, NODE_ENV: 'production' }, encoding: 'utf8' },
    );
    expect(out.trim()).toBe('0');
  });
});
