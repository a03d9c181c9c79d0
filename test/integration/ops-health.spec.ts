import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  FunctionPublisher,
  IdempotencyHealthIndicator,
  OutboxRelay,
  type OutboxHealthDetails,
} from '../../lib';
import { databaseKinds, openDataSource, type TestDatabase } from '../support/databases';
import { startAppOnDatabase, stopAppOnDatabase } from '../support/app-on-database';
import { eventually } from '../support/eventually';
import { clockFor, dataSourceOf, sqlFor, startOpsApp } from '../support/ops-fixture';
import { startSampleApp, type Platform } from '../support/sample-app';

describe.each(databaseKinds())('health indicator on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  let sql: ReturnType<typeof sqlFor>;
  const at = clockFor(kind);
  let hold: Promise<void> | undefined;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    const publisher = new FunctionPublisher(async (m) => {
      if ((m.payload as { name?: string }).name === 'hang') await hold;
    });
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startOpsApp(dbUrl, {
        cleanup: { enabled: false },
        outbox: { publisher, pollIntervalMs: 50 },
        health: { relayHeartbeatTimeoutMs: 5000, maxPendingAgeMs: 60_000 },
      }),
    ));
    sql = sqlFor(kind, dataSourceOf(app));
  });

  afterAll(async () => {
    release();
    await stopAppOnDatabase({ app, db });
  });

  const check = async (thresholds = {}): Promise<OutboxHealthDetails> =>
    (await app.get(IdempotencyHealthIndicator).isHealthy('outbox', thresholds)).outbox;

  const insertOutbox = (
    id: string,
    status: 'pending' | 'dead',
    createdAgoMs: number,
    dueInMs: number,
  ) =>
    sql(
      `INSERT INTO outbox_messages (id, type, payload, status, attempts, next_attempt_at, created_at)
       VALUES (?, 'health.test', '{}', '${status}', 0, ${at(dueInMs)}, ${at(-createdAgoMs)})`,
      [id],
    );

  it('is up while the relay polls and nothing waits', async () => {
    const h = await check();
    expect(h).toMatchObject({ status: 'up', relay: 'running', pending: 0, deadLetters: 0 });
    expect(h.relayLastPollMsAgo).toBeLessThan(5000);
  });

  it('goes down when the oldest pending message is older than the threshold, and up again when it is gone', async () => {
    const id = `old-${randomUUID()}`;
    // Written ten minutes ago and not due for an hour (in backoff): the relay leaves it pending.
    await insertOutbox(id, 'pending', 10 * 60_000, 3_600_000);
    const down = await check();
    expect(down.status).toBe('down');
    expect(down.pending).toBe(1);
    expect(down.oldestPendingAgeMs).toBeGreaterThanOrEqual(10 * 60_000 - 5000);
    expect(down.reasons?.join(' ')).toMatch(/oldest pending outbox message/);
    // A looser threshold for this call only.
    expect((await check({ maxPendingAgeMs: 3_600_000 })).status).toBe('up');
    await sql(`DELETE FROM outbox_messages WHERE id = ?`, [id]);
    expect((await check()).status).toBe('up');
  });

  it('counts dead letters and goes down above maxDeadLetters', async () => {
    const id = `dead-${randomUUID()}`;
    await insertOutbox(id, 'dead', 60_000, 0);
    expect(await check()).toMatchObject({ status: 'up', deadLetters: 1 });
    const down = await check({ maxDeadLetters: 0 });
    expect(down.status).toBe('down');
    expect(down.reasons?.join(' ')).toMatch(/dead letters/);
    await sql(`DELETE FROM outbox_messages WHERE id = ?`, [id]);
  });

  it('goes down when the relay hangs (no heartbeat) and recovers when it moves again', async () => {
    hold = new Promise<void>((r) => (release = r));
    const created = await fetch(`${url}/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ name: 'hang' }),
    });
    expect(created.status).toBe(201);
    const stale = await eventually('the relay to be reported stale', async () => {
      const h = await check({ relayHeartbeatTimeoutMs: 300 });
      return h.relay === 'stale' ? h : undefined;
    });
    expect(stale.status).toBe('down');
    expect(stale.reasons?.join(' ')).toMatch(/has not polled/);
    release();
    await eventually(
      'the relay to poll again',
      async () => (await check({ relayHeartbeatTimeoutMs: 300 })).relay === 'running',
    );
    await eventually('the held message to be published', async () => (await check()).pending === 0);
  });

  it('goes down when the relay stops, and up when it starts again', async () => {
    const relay = app.get(OutboxRelay);
    await relay.stop();
    const down = await check();
    expect(down).toMatchObject({ status: 'down', relay: 'stopped' });
    relay.start();
    expect(
      await eventually('up again', async () =>
        (await check()).status === 'up' ? check() : undefined,
      ),
    ).toMatchObject({
      relay: 'running',
    });
  });

  it('reports a process without a relay as disabled, judged on the backlog only', async () => {
    const apiOnly = await startOpsApp(db.url, {
      cleanup: { enabled: false },
      outbox: { relayEnabled: false },
    });
    try {
      expect((await apiOnly.get(IdempotencyHealthIndicator).isHealthy()).outbox).toMatchObject({
        status: 'up',
        relay: 'disabled',
      });
    } finally {
      await apiOnly.close();
    }
  });
});

describe.each<Platform>(['express', 'fastify'])('sample app GET /health on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase('sqlite', (dbUrl) =>
      startSampleApp(dbUrl, platform, { HEALTH_MAX_PENDING_AGE_MS: '60000' }),
    ));
  });

  afterAll(() => stopAppOnDatabase({ app, db }));

  it('answers 200 with the outbox details when healthy, 503 with the reasons when the backlog ages', async () => {
    const ok = await fetch(`${url}/health`);
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as any;
    expect(body.status).toBe('ok');
    expect(body.details.outbox.status).toBe('up');

    const ds = await openDataSource(db.url);
    try {
      const id = `old-${randomUUID()}`;
      const at = clockFor('sqlite');
      await ds.query(
        `INSERT INTO outbox_messages (id, type, payload, status, attempts, next_attempt_at, created_at) VALUES (?, 'health.test', '{}', 'pending', 0, ${at(3_600_000)}, ${at(-600_000)})`,
        [id],
      );
      const bad = await fetch(`${url}/health`);
      expect(bad.status).toBe(503);
      const failed = (await bad.json()) as any;
      expect(failed.status).toBe('error');
      expect(failed.error.outbox.status).toBe('down');
      expect(failed.error.outbox.reasons.join(' ')).toMatch(/oldest pending outbox message/);
      await ds.query(`DELETE FROM outbox_messages WHERE id = ?`, [id]);
      expect((await fetch(`${url}/health`)).status).toBe(200);
    } finally {
      await ds.destroy();
    }
  });
});
