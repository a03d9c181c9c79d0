import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { eventually } from '../support/eventually';
import { baseUrl, startSampleApp } from '../support/sample-app';

/**
 * The sample app's refunds (POST /payments/:id/refunds): a second and third event with the
 * payment's partition key (`payment.refunded`), applied by the ledger after the capture, each
 * entry with its position; bad input answered with problem+json, nothing written. Embedded
 * transport, per database.
 */
describe.each(databaseKinds())('sample app refunds on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    // Per-key order on the relay: a payment's refund is not published while its capture is
    // pending or in flight (the embedded transport runs a batch's handlers concurrently).
    app = await startSampleApp(db.url, 'express', {
      OUTBOX_POLL_INTERVAL_MS: '200',
      OUTBOX_ORDERED: 'true',
    });
    url = await baseUrl(app);
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const post = async (path: string, body: object, key = randomUUID()) => {
    const r = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    return { status: r.status, type: r.headers.get('content-type'), body: (await r.json()) as any };
  };
  const ledger = async (id: string) =>
    (await (await fetch(`${url}/ledger?paymentId=${id}`)).json()) as any[];

  it('applies a payment and its refunds once each, in the order they were made', async () => {
    const payment = await post('/payments', { amount: 10, currency: 'EUR', customerId: 'c-1' });
    expect(payment.status).toBe(201);
    const id = payment.body.id as string;
    const key = randomUUID();
    const first = await post(`/payments/${id}/refunds`, { amount: 2.5 }, key);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ paymentId: id, amount: 2.5, currency: 'EUR' });
    // The same refund sent again with its key is replayed, not made twice.
    const again = await post(`/payments/${id}/refunds`, { amount: 2.5 }, key);
    expect(again.body.id).toBe(first.body.id);
    expect((await post(`/payments/${id}/refunds`, { amount: 4 })).status).toBe(201);
    await eventually('three ledger entries', async () => (await ledger(id)).length >= 3, 30_000);
    const entries = (await ledger(id)).sort((a, b) => a.position - b.position);
    expect(entries.map((e) => [e.position, e.entryType, e.amount])).toEqual([
      [1, 'capture', 10],
      [2, 'refund', 2.5],
      [3, 'refund', 4],
    ]);
    expect((await (await fetch(`${url}/payments/${id}`)).json()).status).toBe('refunded');
  });

  it('refuses an unknown payment (404), more than its amount and a bad amount (400), writing nothing', async () => {
    const payment = await post('/payments', { amount: 10, currency: 'EUR', customerId: 'c-2' });
    const id = payment.body.id as string;
    const unknown = await post(`/payments/${randomUUID()}/refunds`, { amount: 1 });
    expect(unknown.status).toBe(404);
    expect(unknown.type).toContain('application/problem+json');
    const tooMuch = await post(`/payments/${id}/refunds`, { amount: 10.01 });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.type).toContain('application/problem+json');
    expect((await post(`/payments/${id}/refunds`, { amount: -1 })).status).toBe(400);
    expect((await post(`/payments/${id}/refunds`, {})).status).toBe(400);
    await eventually('the capture entry', async () => (await ledger(id)).length >= 1, 30_000);
    expect((await ledger(id)).map((e) => e.entryType)).toEqual(['capture']);
    expect((await (await fetch(`${url}/payments/${id}`)).json()).status).toBe('captured');
  });
});
