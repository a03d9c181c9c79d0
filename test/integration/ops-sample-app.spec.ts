import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { startAppOnDatabase, stopAppOnDatabase } from '../support/app-on-database';
import { openDataSource, type TestDatabase } from '../support/databases';
import { eventually } from '../support/eventually';
import { startSampleApp, type Platform } from '../support/sample-app';

const pay = (url: string, key: string, customerId: string) =>
  fetch(`${url}/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ amount: 10, currency: 'EUR', customerId }),
  });

const outbox = async (url: string, query: string) => {
  const r = await fetch(`${url}/admin/outbox?${query}`);
  expect(r.status).toBe(200);
  return (await r.json()) as any[];
};

describe.each<Platform>(['express', 'fastify'])(
  'sample app operations endpoints on %s',
  (platform) => {
    let db: TestDatabase;
    let app: INestApplication;
    let url: string;

    beforeAll(async () => {
      ({ db, app, url } = await startAppOnDatabase('sqlite', (dbUrl) =>
        startSampleApp(dbUrl, platform),
      ));
    });

    afterAll(() => stopAppOnDatabase({ app, db }));

    it('lists outbox messages under /admin/outbox by status and partition key, and re-queues one', async () => {
      const created = await pay(url, randomUUID(), 'admin-1');
      expect(created.status).toBe(201);
      const payment = (await created.json()) as { id: string };
      const [sent] = await eventually('payment.captured to be sent', async () => {
        const rows = await outbox(url, `status=sent&partitionKey=${payment.id}`);
        return rows.length ? rows : undefined;
      });
      expect(sent).toMatchObject({
        type: 'payment.captured',
        status: 'sent',
        partitionKey: payment.id,
        attempts: 1, // the publish that succeeded counts
      });
      expect(typeof sent.id).toBe('string');
      expect(await outbox(url, `status=dead&partitionKey=${payment.id}`)).toEqual([]);

      const requeued = await fetch(`${url}/admin/outbox/${sent.id}/requeue`, { method: 'POST' });
      expect(requeued.status).toBe(200);
      await eventually('the re-queued message to be sent again', async () => {
        const [row] = await outbox(url, `partitionKey=${payment.id}`);
        return row?.status === 'sent' && row.sentAt !== sent.sentAt;
      });

      const bad = await fetch(`${url}/admin/outbox?status=lost`);
      expect(bad.status).toBe(400);
      expect(bad.headers.get('content-type')).toContain('application/problem+json');
    });

    it('exposes the metrics at GET /metrics in the Prometheus text format', async () => {
      expect((await pay(url, randomUUID(), 'metrics-1')).status).toBe(201);
      await eventually(
        'the outbox to drain',
        async () => (await outbox(url, 'status=pending')).length === 0,
      );
      const r = await fetch(`${url}/metrics`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(r.headers.get('content-type')).toContain('version=0.0.4');
      const text = await r.text();
      for (const line of [
        '# TYPE idempotency_started_total counter',
        '# TYPE idempotency_store_duration histogram',
        '# TYPE outbox_published_total counter',
        '# TYPE outbox_publish_lag histogram',
        '# TYPE outbox_backlog gauge',
        '# TYPE outbox_oldest_pending_age gauge',
        '# TYPE outbox_dead_letters gauge',
        '# TYPE inbox_processed_total counter',
      ]) {
        expect(text).toContain(line);
      }
      const started = /^idempotency_started_total\{[^}]*\} (\d+)/m.exec(text);
      expect(Number(started?.[1])).toBeGreaterThanOrEqual(1);
      expect(text).toMatch(/^outbox_backlog\{[^}]*\} 0$/m);
    });
  },
);

describe('sample app retention from the environment (seconds, to watch it work)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase('sqlite', (dbUrl) =>
      startSampleApp(dbUrl, 'express', {
        IDEMPOTENCY_TTL_MS: '300',
        OUTBOX_RETENTION_MS: '300',
        INBOX_RETENTION_MS: '300',
        CLEANUP_INTERVAL_MS: '100',
      }),
    ));
  });

  afterAll(() => stopAppOnDatabase({ app, db }));

  it('deletes the expired key, the sent message and the inbox record; the key then runs anew', async () => {
    const key = randomUUID();
    const first = await pay(url, key, 'retention-1');
    expect(first.status).toBe(201);
    const payment = (await first.json()) as { id: string };
    const idempotency = `/admin/idempotency?scope=${encodeURIComponent('public|-|POST /payments')}&key=${key}`;
    expect((await fetch(`${url}${idempotency}`)).status).toBe(200);

    await eventually(
      'the expired key to be deleted',
      async () => (await fetch(`${url}${idempotency}`)).status === 404,
    );
    await eventually(
      'the sent message to be deleted',
      async () => (await outbox(url, `partitionKey=${payment.id}`)).length === 0,
    );
    const ds = await openDataSource(db.url);
    try {
      await eventually(
        'inbox records to be deleted',
        async () => Number((await ds.query(`SELECT COUNT(*) AS n FROM inbox_messages`))[0].n) === 0,
      );
    } finally {
      await ds.destroy();
    }

    const again = await pay(url, key, 'retention-1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replayed')).toBeNull();
    expect(((await again.json()) as { id: string }).id).not.toBe(payment.id);
  });
});
