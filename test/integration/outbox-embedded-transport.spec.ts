import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InboxService, InProcessPublisher, OutboxAdminService, OutboxPublisher } from '../../lib';
import { eventually } from '../support/eventually';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';
import { appSetupTimeoutMs, baseUrl, startSampleApp } from '../support/sample-app';

/**
 * The sample app's embedded default (no BROKER_URL): the relay runs the ledger's and the
 * notifications service's `@OnOutboxMessage()` handlers (the in-process publisher), each in its
 * own transaction with its inbox record under the consumer names the broker consumers use.
 */
describe.each(databaseKinds())(
  'sample app: the embedded default runs on the in-process outbox handlers (%s)',
  (kind) => {
    let db: TestDatabase;
    let app: INestApplication;
    let url: string;
    let admin: OutboxAdminService;
    let inbox: InboxService;

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      app = await startSampleApp(db.url, 'express', {
        BROKER_URL: '',
        // The first run of each ledger handler fails after writing its entry (rolled back).
        LEDGER_DEMO_FAIL_ATTEMPTS: '1',
        OUTBOX_BACKOFF_BASE_MS: '50',
        OUTBOX_BACKOFF_MAX_MS: '200',
        OUTBOX_POLL_INTERVAL_MS: '100',
      });
      url = await baseUrl(app);
      admin = app.get(OutboxAdminService);
      inbox = app.get(InboxService);
    }, appSetupTimeoutMs(kind));

    afterAll(async () => {
      await app?.close();
      await db?.drop();
    });

    const json = async <T>(path: string): Promise<T> => (await fetch(`${url}${path}`)).json() as T;

    it('publishes through the in-process publisher', () => {
      expect(app.get(OutboxPublisher, { strict: false })).toBeInstanceOf(InProcessPublisher);
    });

    it('a payment: one ledger entry and one notification, each keyed by the outbox message id, after a failed first run', async () => {
      const r = await fetch(`${url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify({ amount: 12.5, currency: 'EUR', customerId: 'embedded-1' }),
      });
      expect(r.status).toBe(201);
      const payment = (await r.json()) as { id: string };
      const [message] = await admin.list({ partitionKey: payment.id });
      await eventually(
        'the message is sent',
        async () => (await admin.get(message.id))?.status === 'sent',
      );
      // The ledger's first run failed and was rolled back: the relay retried the message.
      expect((await admin.get(message.id))!.attempts).toBe(2);
      const ledger = await json<Array<Record<string, unknown>>>(`/ledger?paymentId=${payment.id}`);
      expect(ledger).toEqual([
        expect.objectContaining({
          paymentId: payment.id,
          entryType: 'capture',
          amount: 12.5,
          currency: 'EUR',
          customerId: 'embedded-1',
          messageId: message.id,
          position: 1,
        }),
      ]);
      const notes = await json<Array<Record<string, unknown>>>(
        `/notifications?paymentId=${payment.id}`,
      );
      expect(notes).toEqual([
        expect.objectContaining({
          paymentId: payment.id,
          customerId: 'embedded-1',
          text: 'Payment of 12.50 EUR captured',
          messageId: message.id,
        }),
      ]);
      expect(await inbox.find('ledger', message.id)).toMatchObject({ status: 'processed' });
      expect(await inbox.find('notifications', message.id)).toMatchObject({
        status: 'processed',
      });

      // Published again (an operator's requeue): both inbox records hold, nothing is written twice.
      expect(await admin.requeue(message.id)).toBe(1);
      await eventually(
        'the requeued message is sent again',
        async () => (await admin.get(message.id))?.status === 'sent',
      );
      expect(await json<unknown[]>(`/ledger?paymentId=${payment.id}`)).toHaveLength(1);
      expect(await json<unknown[]>(`/notifications?paymentId=${payment.id}`)).toHaveLength(1);
    });
  },
);
