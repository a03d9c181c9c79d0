import type { INestApplication } from '@nestjs/common';
import { getRepositoryToken } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import type { DataSource, Repository } from 'typeorm';
import { InboxService, PROBLEM_TYPES } from '../../lib';
import { Payment } from '../../sample-app/payments/payment.entity';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { baseUrl } from '../support/sample-app';
import { postJson } from '../fixtures/gate/http';
import {
  createAdoptionApp,
  paymentOf,
  RecordingLogger,
} from '../fixtures/adoption/adoption-fixture';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';

const REFUSED =
  /^IdempotencyModule: a write ran outside the request's transaction \((?:INSERT|BEGIN) during (POST \/adoption\/\S+|consumer \S+)\) and was refused: .* Write through the ambient transaction: TransactionHost\.tx \(nestjs-cls\)/;

/**
 * strayWrites: a write issued on the DataSource outside the request's (or the consumer's)
 * transaction while the handler runs, here through an @InjectRepository() repository, is
 * refused (`error`, the default outside production) or logged (`warn`); writes through
 * TransactionHost.tx and the library's own statements are never flagged. Over every database.
 */
describe.each(databaseKinds())('stray writes on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let ds: DataSource;
  const logger = new RecordingLogger();

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    app = await createAdoptionApp({ dbUrl: db.url, logger });
    await app.init();
    await app.listen(0, '127.0.0.1');
    url = await baseUrl(app);
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    await app?.close();
    await db?.drop();
  });

  const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;
  const payments = async (c: string) =>
    Number((await ds.query(`SELECT COUNT(*) AS n FROM payments WHERE customer_id = '${c}'`))[0].n);
  const records = async () =>
    Number((await ds.query('SELECT COUNT(*) AS n FROM idempotency_records'))[0].n);

  it('a handler writing through @InjectRepository: 500 misconfigured, nothing committed, the key stays free', async () => {
    const c = customer('repo');
    const before = await records();
    const key = randomUUID();
    const r = await postJson(`${url}/adoption/repository`, key, { customer: c });
    expect(r.status).toBe(500);
    expect(r.headers.get('retry-after')).toBeNull();
    expect(r.json()).toMatchObject({ type: PROBLEM_TYPES.misconfigured, status: 500 });
    expect(await payments(c)).toBe(0);
    expect(await records()).toBe(before);
    // Not stored: a retry runs again (and fails again, until the code is fixed).
    const again = await postJson(`${url}/adoption/repository`, key, { customer: c });
    expect(again.status).toBe(500);
    expect(again.headers.get('idempotency-replayed')).toBeNull();
    const logged = logger.of('error').join('\n');
    expect(logged).toContain(
      "IdempotencyModule: a write ran outside the request's transaction (INSERT during POST /adoption/repository) and was refused",
    );
  });

  it('a handler that catches the refused statement still fails: its other writes roll back', async () => {
    const c = customer('swallowed');
    const r = await postJson(`${url}/adoption/swallowed`, randomUUID(), { customer: c });
    expect(r.status).toBe(500);
    expect(r.json()).toMatchObject({ type: PROBLEM_TYPES.misconfigured });
    expect(await payments(c)).toBe(0);
    expect(await payments(`${c}-tx`)).toBe(0);
  });

  it('leased mode, a repository write: 500 misconfigured, nothing committed, the reservation released', async () => {
    const c = customer('leased-repo');
    const key = randomUUID();
    const r = await postJson(`${url}/adoption/leased-repository`, key, { customer: c });
    expect(r.status).toBe(500);
    expect(r.json()).toMatchObject({ type: PROBLEM_TYPES.misconfigured });
    expect(await payments(c)).toBe(0);
    const again = await postJson(`${url}/adoption/leased-repository`, key, { customer: c });
    expect(again.status).toBe(500);
    expect(again.json()).toMatchObject({ type: PROBLEM_TYPES.misconfigured });
  });

  it("strayWrites: 'warn': the request succeeds and one warning names the statement and the route", async () => {
    const first = customer('warned');
    const second = customer('warned');
    const r1 = await postJson(`${url}/adoption/warned`, randomUUID(), { customer: first });
    const r2 = await postJson(`${url}/adoption/warned`, randomUUID(), { customer: second });
    expect([r1.status, r2.status]).toEqual([201, 201]);
    expect(await payments(first)).toBe(1);
    expect(await payments(second)).toBe(1);
    const warnings = logger.of('warn').filter((l) => l.includes('POST /adoption/warned'));
    expect(warnings).toEqual([
      expect.stringMatching(
        /^IdempotencyModule: a write ran outside the request's transaction \(INSERT during POST \/adoption\/warned\): it committed on its own/,
      ),
    ]);
  });

  it('writes through TransactionHost.tx are not flagged, in either mode, and replay', async () => {
    for (const route of ['tx', 'leased-tx']) {
      const c = customer(route);
      const key = randomUUID();
      const r = await postJson(`${url}/adoption/${route}`, key, { customer: c });
      expect(r.status).toBe(201);
      const replay = await postJson(`${url}/adoption/${route}`, key, { customer: c });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotency-replayed')).toBe('true');
      expect(await payments(c)).toBe(1);
    }
    expect(logger.of('warn').filter((l) => /\/adoption\/(leased-)?tx\b/.test(l))).toEqual([]);
  });

  it("leased mode: the library's own statements outside the transaction (lease renewals) are not flagged", async () => {
    const c = customer('leased-slow');
    const r = await postJson(`${url}/adoption/leased-slow`, randomUUID(), { customer: c });
    expect(r.status).toBe(201);
    expect(await payments(c)).toBe(1);
    const lines = logger.lines.map((l) => l.message).join('\n');
    expect(lines).not.toContain('lease-renewal-failed');
    expect(lines).not.toContain('/adoption/leased-slow');
  });

  it('outside a guarded handler, a repository write is nobody’s business', async () => {
    const repo = app.get<Repository<Payment>>(getRepositoryToken(Payment));
    const c = customer('free');
    await repo.insert(paymentOf(c));
    expect(await payments(c)).toBe(1);
  });

  describe('an inbox consumer', () => {
    let inbox: InboxService;
    let repo: Repository<Payment>;
    let txHost: TransactionHost<TransactionalAdapterTypeOrm>;
    beforeAll(() => {
      inbox = app.get(InboxService);
      repo = app.get(getRepositoryToken(Payment));
      txHost = app.get(TransactionHost);
    });

    it('writing through a repository is refused; the attempt fails and nothing is committed', async () => {
      const c = customer('inbox-repo');
      await expect(
        inbox.process('stray-consumer', randomUUID(), () => repo.insert(paymentOf(c))),
      ).rejects.toThrow(REFUSED);
      expect(await payments(c)).toBe(0);
    });

    it("with strayWrites: 'ignore' for the call, or through TransactionHost.tx, it is processed", async () => {
      const c = customer('inbox-ok');
      const ignored = await inbox.process(
        'stray-consumer',
        randomUUID(),
        () => repo.insert(paymentOf(c)),
        { strayWrites: 'ignore' },
      );
      expect(ignored.status).toBe('processed');
      const inside = await inbox.process('stray-consumer', randomUUID(), () =>
        txHost.tx.getRepository(Payment).insert(paymentOf(c)),
      );
      expect(inside.status).toBe('processed');
      expect(await payments(c)).toBe(2);
    });
  });
});
