import type { INestApplication } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { randomUUID } from 'node:crypto';
import {
  CleanupService,
  FunctionPublisher,
  InboxService,
  METER_NAME,
  METRIC_NAMES,
} from '../../lib';
import { startAppOnDatabase, stopAppOnDatabase } from '../support/app-on-database';
import { databaseKinds, type TestDatabase } from '../support/databases';
import { eventually } from '../support/eventually';
import { clockFor, dataSourceOf, postThing, sqlFor, startOpsApp } from '../support/ops-fixture';

// The SDK must be registered before the apps are created (instruments are made at construction).
const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
const provider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(provider);

/** Current metrics of the library's meter, by instrument name. */
async function collect(): Promise<Map<string, MetricData>> {
  exporter.reset();
  await reader.forceFlush();
  const out = new Map<string, MetricData>();
  for (const rm of exporter.getMetrics()) {
    for (const sm of rm.scopeMetrics) {
      if (sm.scope.name !== METER_NAME) continue;
      for (const m of sm.metrics) out.set(m.descriptor.name, m);
    }
  }
  return out;
}

/** Sum of a counter / gauge value (or a histogram's count) over its data points, optionally filtered by an attribute. */
function total(
  m: Map<string, MetricData>,
  name: string,
  attrs: Record<string, string> = {},
): number {
  const data = m.get(name);
  if (!data) return 0;
  let sum = 0;
  for (const p of data.dataPoints as any[]) {
    if (!Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)) continue;
    sum += typeof p.value === 'number' ? p.value : p.value.count;
  }
  return sum;
}

afterAll(() => provider.shutdown());

describe.each(databaseKinds())('metrics on %s', (kind) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;
  const published = new Set<string>();

  beforeAll(async () => {
    const unreachableTries = new Map<string, number>();
    const publisher = new FunctionPublisher((m) => {
      const name = (m.payload as { name?: string }).name;
      if (name === 'doomed') throw new Error('rejected');
      // The broker unreachable for this message's first two tries: no attempt, the relay backs off.
      const tries = unreachableTries.get(m.id) ?? 0;
      if (name === 'unreachable' && tries < 2) {
        unreachableTries.set(m.id, tries + 1);
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5672'), {
          code: 'ECONNREFUSED',
        });
      }
      published.add(m.id);
    });
    ({ db, app, url } = await startAppOnDatabase(kind, (dbUrl) =>
      startOpsApp(dbUrl, {
        cleanup: { enabled: false },
        outbox: { publisher, maxAttempts: 1, pollIntervalMs: 50 },
        // The read-first policy (below) is about replays that reach the database: with the
        // replay cache on, this process answers them from memory.
        replayCache: false,
      }),
    ));
  });

  afterAll(() => stopAppOnDatabase({ app, db }));

  const post = (key: string, body: object) => postThing(url, key, body);

  it('emits every documented instrument with its unit as the gate, relay, inbox, gauges and cleanup work', async () => {
    const before = await collect();
    const delta = (after: Map<string, MetricData>, name: string, attrs?: Record<string, string>) =>
      total(after, name, attrs) - total(before, name, attrs);

    // Gate: started, replayed, mismatch, in-progress.
    const key = randomUUID();
    const first = await post(key, { name: 'm1' });
    expect(first.status).toBe(201);
    const { messageId } = (await first.json()) as { messageId: string };
    expect((await post(key, { name: 'm1' })).headers.get('idempotency-replayed')).toBe('true');
    expect((await post(key, { name: 'other' })).status).toBe(422);
    // A duplicate while the first request still runs (retried with a new key if the first was too quick).
    let conflicted = false;
    for (let i = 0; i < 5 && !conflicted; i++) {
      const slowKey = randomUUID();
      const slow = post(slowKey, { name: 'slow', delayMs: 1000 });
      await new Promise((r) => setTimeout(r, 100));
      conflicted = (await post(slowKey, { name: 'slow', delayMs: 1000 })).status === 409;
      expect((await slow).status).toBe(201);
    }
    expect(conflicted).toBe(true);

    // Relay: one published (with its lag), one failed and dead.
    const doomed = await post(randomUUID(), { name: 'doomed' });
    expect(doomed.status).toBe(201);
    await eventually('the message to be published', async () => published.has(messageId));
    await eventually(
      'a dead letter',
      async () =>
        total(await collect(), METRIC_NAMES.outboxDead) > total(before, METRIC_NAMES.outboxDead),
    );

    // Relay: the broker unreachable twice, then the message goes through (not counted as failed).
    const unreachable = await post(randomUUID(), { name: 'unreachable' });
    expect(unreachable.status).toBe(201);
    const unreachableId = ((await unreachable.json()) as { messageId: string }).messageId;
    await eventually('the message after the outage', async () => published.has(unreachableId));

    // Inbox: processed once, then a duplicate.
    const inbox = app.get(InboxService);
    const id = randomUUID();
    expect((await inbox.process('metrics-suite', id, () => 1)).status).toBe('processed');
    expect((await inbox.process('metrics-suite', id, () => 1)).status).toBe('duplicate');

    // Gauges: a pending message written ten minutes ago and not due yet.
    const sql = sqlFor(kind, dataSourceOf(app));
    const at = clockFor(kind);
    await sql(
      `INSERT INTO outbox_messages (id, type, payload, status, attempts, next_attempt_at, created_at) VALUES (?, 'metrics.test', '{}', 'pending', 0, ${at(3_600_000)}, ${at(-600_000)})`,
      [`gauge-${randomUUID()}`],
    );

    // Cleanup: three expired records.
    for (const n of [1, 2, 3]) {
      await sql(
        `INSERT INTO idempotency_records (scope, idempotency_key, request_hash, state, response_status, response_headers, created_at, completed_at, expires_at)
         VALUES ('metrics-suite', ?, ?, 'completed', 200, '{"h":[]}', ${at(-7_200_000)}, ${at(-7_200_000)}, ${at(-3_600_000)})`,
        [`expired-${randomUUID()}-${n}`, Buffer.alloc(32)],
      );
    }
    const report = await app.get(CleanupService).runOnce();
    expect(report.deleted.idempotency).toBeGreaterThanOrEqual(3);

    await new Promise((r) => setTimeout(r, 1100)); // the gauges' one-second cache
    const after = await collect();

    expect(delta(after, METRIC_NAMES.idempotencyStarted)).toBeGreaterThanOrEqual(3);
    expect(delta(after, METRIC_NAMES.idempotencyReplayed)).toBeGreaterThanOrEqual(1);
    expect(delta(after, METRIC_NAMES.idempotencyMismatchConflicts)).toBe(1);
    expect(delta(after, METRIC_NAMES.idempotencyInProgressConflicts)).toBeGreaterThanOrEqual(1);
    expect(
      delta(after, METRIC_NAMES.idempotencyStoreDuration, { op: 'reserve' }),
    ).toBeGreaterThanOrEqual(4);
    expect(delta(after, METRIC_NAMES.outboxPublished)).toBeGreaterThanOrEqual(2);
    expect(delta(after, METRIC_NAMES.outboxPublishLag)).toBeGreaterThanOrEqual(2);
    expect(delta(after, METRIC_NAMES.outboxFailed)).toBeGreaterThanOrEqual(1);
    expect(delta(after, METRIC_NAMES.outboxDead)).toBe(1);
    expect(delta(after, METRIC_NAMES.outboxUnavailable)).toBe(2);
    // The relay backed off and has recovered: the gauge is there, at 0.
    expect(after.has(METRIC_NAMES.outboxRelayBackingOff)).toBe(true);
    expect(total(after, METRIC_NAMES.outboxRelayBackingOff)).toBe(0);
    expect(delta(after, METRIC_NAMES.inboxProcessed, { consumer: 'metrics-suite' })).toBe(1);
    expect(delta(after, METRIC_NAMES.inboxDuplicates, { consumer: 'metrics-suite' })).toBe(1);
    expect(delta(after, METRIC_NAMES.cleanupDeleted, { table: 'idempotency' })).toBe(
      report.deleted.idempotency,
    );
    expect(delta(after, METRIC_NAMES.cleanupDuration)).toBe(1);
    // Gauges report the current state of this database.
    expect(total(after, METRIC_NAMES.outboxBacklog)).toBeGreaterThanOrEqual(1);
    // Per publisher: the message above has no route, so it waits for the `default` one.
    expect(
      total(after, METRIC_NAMES.outboxPublisherBacklog, { publisher: 'default' }),
    ).toBeGreaterThanOrEqual(1);
    expect(total(after, METRIC_NAMES.outboxPublisherBacklog, { publisher: 'nowhere' })).toBe(0);
    expect(total(after, METRIC_NAMES.outboxOldestPendingAge)).toBeGreaterThanOrEqual(
      600_000 - 5000,
    );
    expect(total(after, METRIC_NAMES.outboxDeadLetters)).toBeGreaterThanOrEqual(1);

    const units: Record<string, string> = {
      [METRIC_NAMES.idempotencyStarted]: '{request}',
      [METRIC_NAMES.idempotencyStoreDuration]: 'ms',
      [METRIC_NAMES.outboxPublished]: '{message}',
      [METRIC_NAMES.outboxPublishLag]: 'ms',
      [METRIC_NAMES.outboxUnavailable]: '{message}',
      [METRIC_NAMES.outboxRelayBackingOff]: '1',
      [METRIC_NAMES.outboxBacklog]: '{message}',
      [METRIC_NAMES.outboxPublisherBacklog]: '{message}',
      [METRIC_NAMES.outboxOldestPendingAge]: 'ms',
      [METRIC_NAMES.inboxProcessed]: '{message}',
      [METRIC_NAMES.cleanupDeleted]: '{row}',
      [METRIC_NAMES.cleanupDuration]: 'ms',
    };
    for (const [name, unit] of Object.entries(units)) {
      expect(after.get(name)?.descriptor.unit).toBe(unit);
    }
  });

  it('answers a replay-heavy transactional endpoint with one read first, and turns that off when first executions return', async () => {
    const lookups = async () =>
      total(await collect(), METRIC_NAMES.idempotencyStoreDuration, { op: 'lookup' });
    // Reads outside a transaction would queue behind in-flight reservations on SQL Server: no look-up there.
    const looksUp = kind !== 'mssql';
    const key = randomUUID();
    const first = await post(key, { name: 'storm' });
    expect(first.status).toBe(201);
    const body = await first.text();
    const replay = async () => {
      const r = await post(key, { name: 'storm' });
      expect(r.status).toBe(201);
      expect(r.headers.get('idempotency-replayed')).toBe('true');
      expect(await r.text()).toBe(body);
    };

    // A burst of first executions settles the endpoint's share of replays near zero.
    for (let i = 0; i < 40; i++) {
      expect((await post(randomUUID(), { name: 'calm' })).status).toBe(201);
    }
    const start = await lookups();
    // Below half the requests being replays, every request reserves at once.
    for (let i = 0; i < 15; i++) await replay();
    expect((await lookups()) - start).toBe(0);
    // Past half, replays are one read outside any transaction.
    for (let i = 0; i < 40; i++) await replay();
    const afterStorm = await lookups();
    if (looksUp) expect(afterStorm - start).toBeGreaterThanOrEqual(10);
    else expect(afterStorm - start).toBe(0);

    // While it is on: another payload is still refused, a new key still runs once and replays.
    expect((await post(key, { name: 'other payload' })).status).toBe(422);
    const fresh = randomUUID();
    const created = await post(fresh, { name: 'new' });
    expect(created.status).toBe(201);
    const again = await post(fresh, { name: 'new' });
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await again.text()).toBe(await created.text());

    // First executions again: the look-up stops once they are the majority.
    for (let i = 0; i < 40; i++) {
      expect((await post(randomUUID(), { name: 'calm' })).status).toBe(201);
    }
    const settled = await lookups();
    for (let i = 0; i < 10; i++) {
      expect((await post(randomUUID(), { name: 'calm' })).status).toBe(201);
    }
    expect((await lookups()) - settled).toBe(0);
  });
});
