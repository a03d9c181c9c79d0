import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { TcpProxy } from '../fixtures/outbox/tcp-proxy';
import { eventually } from '../support/eventually';
import {
  createTestDatabase,
  databaseKinds,
  MSSQL_URL,
  openDataSource,
  PG_ADMIN_URL,
  placeholder,
  type TestDatabase,
  type TestDatabaseKind,
} from '../support/databases';
import type { AppProcess } from '../support/sample-app';
import {
  type Attempt,
  closeAgents,
  header,
  type KeyOutcome,
  paymentBody,
  postOnce,
  postUntilCreated,
  sleep,
} from './support/fault-client';
import { describeEachDatabase, exited, FaultCluster } from './support/fault-cluster';
import { assertInvariants, keyOf, type Scenario } from './support/invariants';

/**
 * Outages under load, on real sample-app processes, on PostgreSQL and SQL Server:
 * - RabbitMQ unreachable for 30 s (FAULT_BROKER_OUTAGE_MS): the processes reach the broker
 *   through a TCP proxy the test cuts and restores (the machine's RabbitMQ is never touched);
 * - the database sessions of the processes ended again and again for a few seconds
 *   (FAULT_DB_OUTAGE_MS): `pg_terminate_backend` on PostgreSQL, T-SQL `KILL` on SQL Server (on
 *   Babelfish 4.3 that KILL terminates the PostgreSQL backend behind the TDS session);
 * - the database server gone for a few seconds (FAULT_DB_DOWN_MS) and back: the processes reach
 *   the database through a TCP proxy the test cuts (every connection dropped, new ones refused,
 *   what a client sees of a stopped server) and restores. A proxy rather than stopping the
 *   server itself: the test needs no hold on the server's process, so it can be pointed at a
 *   shared local server or at SQL Server in the workflow's service container (run here on
 *   PostgreSQL and Babelfish only); a stop through `pg_ctl` would test Babelfish's process
 *   manager, not SQL Server.
 * While the service cannot do its job it answers 503 (with Retry-After) or 409, never a 2xx it
 * cannot stand by; it recovers by itself, and the invariants hold: nothing lost, nothing doubled.
 */
const BROKER_OUTAGE_MS = Math.max(5000, Number(process.env.FAULT_BROKER_OUTAGE_MS ?? 30_000));
const DB_OUTAGE_MS = Math.max(1000, Number(process.env.FAULT_DB_OUTAGE_MS ?? 5000));
const DB_DOWN_MS = Math.max(1000, Number(process.env.FAULT_DB_DOWN_MS ?? 5000));
const CLIENTS = 6;

const rand = () => randomBytes(3).toString('hex');
const RABBIT_PORT = Number(
  new URL(process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672').port || 5672,
);

/** Clients creating payments one after another (each retrying until its 201) until `stop()`. */
function steadyLoad(prefix: string, targets: () => string[]) {
  const outcomes: KeyOutcome[] = [];
  let running = true;
  let n = 0;
  let failedSoFar = 0;
  const clients = Array.from({ length: CLIENTS }, async (_, c) => {
    while (running) {
      const customerId = `${prefix}${c}-${n++}`;
      const o = await postUntilCreated(keyOf(customerId), customerId, {
        target: (attempt) => {
          const t = targets();
          return t[(c + attempt) % t.length];
        },
        deadlineMs: 120_000,
        onAttempt: (a) => {
          if (a.status === undefined || a.status >= 500) failedSoFar++;
        },
      });
      outcomes.push(o);
      await sleep(20);
    }
  });
  return {
    outcomes,
    /** Attempts so far that failed (no answer or a 5xx), counted as they come, retried or not. */
    failedSoFar: () => failedSoFar,
    async stop(): Promise<KeyOutcome[]> {
      running = false;
      await Promise.all(clients);
      return outcomes;
    },
  };
}

type ServerKind = Extract<TestDatabaseKind['name'], 'postgres' | 'mssql'>;

/** How the test ends the database sessions of the processes, per server. */
interface Sessions {
  /** The id of the session the query runs on. */
  own(ds: DataSource): Promise<number>;
  /** Ends every session connected to `dbName` but `spared` (and the admin's own); how many. */
  endAllBut(admin: DataSource, dbName: string, spared: number): Promise<number>;
}

const SESSIONS: Record<ServerKind, Sessions & { adminUrl: () => string }> = {
  postgres: {
    adminUrl: () => PG_ADMIN_URL,
    own: async (ds) => Number((await ds.query('SELECT pg_backend_pid() AS id'))[0].id),
    endAllBut: async (admin, dbName, spared) =>
      (
        await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = $1 AND pid <> pg_backend_pid() AND pid <> $2`,
          [dbName, spared],
        )
      ).length,
  },
  mssql: {
    adminUrl: () => MSSQL_URL!,
    own: async (ds) => Number((await ds.query('SELECT @@SPID AS id'))[0].id),
    endAllBut: async (admin, dbName, spared) => {
      const rows: Array<{ id: number }> = await admin.query(
        `SELECT session_id AS id FROM sys.dm_exec_sessions
          WHERE database_id = DB_ID(@0) AND is_user_process = 1 AND session_id <> @@SPID AND session_id <> @1`,
        [dbName, spared],
      );
      let ended = 0;
      for (const { id } of rows) {
        // KILL takes a literal; the id is a number the server gave. A session that ended
        // meanwhile (or that Babelfish does not list as a TDS connection yet) is passed over.
        try {
          await admin.query(`KILL ${Math.trunc(Number(id))}`);
          ended++;
        } catch {
          // gone already
        }
      }
      return ended;
    },
  },
};

const failures = (outcomes: KeyOutcome[]) =>
  outcomes
    .flatMap((o) => o.attempts)
    .filter((a: Attempt) => a.status === undefined || a.status >= 500);

describeEachDatabase(
  databaseKinds().filter((k): k is ServerKind => k === 'postgres' || k === 'mssql'),
  'outages on %s',
  (kind) => {
    const sessions = SESSIONS[kind];
    let db: TestDatabase;
    let ds: DataSource;
    let cluster: FaultCluster;
    let proxy: TcpProxy;
    let dbProxy: TcpProxy;
    let apps: AppProcess[] = [];

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      proxy = await new TcpProxy(RABBIT_PORT).start();
      // The processes reach the database through a proxy (cut in the server-gone case); the
      // test's own connections go straight to it.
      const direct = new URL(db.url);
      dbProxy = await new TcpProxy(Number(direct.port), direct.hostname).start();
      const proxied = new URL(db.url);
      proxied.port = String(dbProxy.port);
      // 3 attempts, far fewer than a 30 s outage would burn at a 3 s backoff cap: a publish that
      // finds the broker unreachable is no attempt (docs/outbox.md), so none turns dead.
      cluster = new FaultCluster(
        proxied.toString(),
        () => `amqp://guest:guest@127.0.0.1:${proxy.port}`,
        { OUTBOX_MAX_ATTEMPTS: '3' },
      );
      apps = [await cluster.spawn()];
      apps.push(await cluster.spawn());
      ds = await openDataSource(db.url);
    }, 120_000);

    afterAll(async () => {
      closeAgents();
      await cluster?.stop();
      await proxy?.cut();
      await dbProxy?.cut();
      await ds?.destroy();
      await db?.drop();
    });

    const scenario = (prefix: string): Scenario => ({
      ds,
      kind,
      prefix,
      live: () => apps.map((a) => a.url),
      queueDepth: () => cluster.queueDepth(),
    });

    const pendingEvents = async (prefix: string) =>
      Number(
        (
          await ds.query(
            `SELECT COUNT(*) AS n FROM outbox_messages WHERE status = 'pending' AND payload LIKE ${placeholder(kind, 0)}`,
            [`%"customerId":"${prefix}%`],
          )
        )[0].n,
      );

    it(`RabbitMQ unreachable for ${BROKER_OUTAGE_MS / 1000} s under load: payments keep being accepted, their events wait, then all arrive once`, async () => {
      const prefix = `ob${rand()}-`;
      const load = steadyLoad(prefix, () => apps.map((a) => a.url));
      await sleep(3000);
      await proxy.cut();
      const cutAt = load.outcomes.length;
      await sleep(BROKER_OUTAGE_MS);
      // The broker was really gone: events of payments accepted meanwhile are waiting in the outbox.
      const waiting = await pendingEvents(prefix);
      const acceptedDuringCut = load.outcomes.length - cutAt;
      await proxy.restore();
      await sleep(3000);
      const outcomes = await load.stop();
      expect(acceptedDuringCut).toBeGreaterThan(0);
      expect(waiting).toBeGreaterThan(0);
      const report = await assertInvariants(scenario(prefix), outcomes, 120_000);
      process.stdout.write(
        `[faults] ${kind} broker outage ${BROKER_OUTAGE_MS} ms: ${report.keys} payments (${acceptedDuringCut} during the cut, ${waiting} events waiting at its end), ${failures(outcomes).length} failed attempts retried, ${report.ledgerEntries} ledger entries\n`,
      );
    });

    /** Every 5xx a 503 with Retry-After (a lost database is not the request's fault), never a 500. */
    const expectOnly503 = (failed: Attempt[]) => {
      const wrong = failed.filter(
        (a) => a.status !== undefined && (a.status !== 503 || !header(a, 'retry-after')),
      );
      expect(
        wrong.map(
          (a) =>
            `${a.status} retry-after=${header(a, 'retry-after')} ${a.body?.toString('utf8').slice(0, 200)}`,
        ),
      ).toEqual([]);
    };

    /** Each process creates a payment again by itself (no restart, no help). */
    const eachProcessServes = async (prefix: string, outcomes: KeyOutcome[]) => {
      for (const app of apps) {
        const c = `${prefix}after-${rand()}`;
        const o = await postUntilCreated(keyOf(c), c, {
          target: () => app.url,
          deadlineMs: 30_000,
        });
        if (!o.created) {
          const seen = o.attempts.map(
            (a) => `${a.status ?? a.error} ${a.body?.toString('utf8').slice(0, 160) ?? ''}`,
          );
          throw new Error(
            `${app.url} did not recover: ${seen.slice(-5).join(' | ')}\n${app.output().slice(-3000)}`,
          );
        }
        outcomes.push(o);
      }
    };

    const statusCounts = (failed: Attempt[]) => {
      const statuses = new Map<string, number>();
      for (const a of failed) {
        statuses.set(
          String(a.status ?? a.error),
          (statuses.get(String(a.status ?? a.error)) ?? 0) + 1,
        );
      }
      return JSON.stringify(Object.fromEntries(statuses));
    };

    it(`database sessions ended for ${DB_OUTAGE_MS / 1000} s under load: 503/409 while it lasts, never a wrong 2xx, recovery without help`, async () => {
      const prefix = `od${rand()}-`;
      const dbName = new URL(db.url).pathname.slice(1);
      const admin = await openDataSource(sessions.adminUrl());
      // The test's own connections to the database go too: reopen afterwards.
      await ds.destroy();
      const load = steadyLoad(prefix, () => apps.map((a) => a.url));
      // One connection of the test's own, spared by the terminations, watches the ledger: in
      // transactional mode a reservation commits only with its completion, so a committed
      // `started` record would be a key blocked for a lease it should never have.
      const watchUrl = new URL(db.url);
      watchUrl.searchParams.set('pool', '1');
      const watch = await openDataSource(watchUrl.toString());
      const watchId = await sessions.own(watch);
      let terminated = 0;
      let committedStarts = 0;
      try {
        await sleep(2000);
        // The sessions are ended for DB_OUTAGE_MS, and on until a request has felt it (at most
        // 30 s more): on a loaded 2-core machine the processes' requests can all be waiting
        // elsewhere (a pool opening a new Babelfish backend takes a second or more) while every
        // round of terminations finds only idle sessions, which the pools replace unseen. CI
        // of e2378fb, SQL Server phase: 0 failed attempts, and the case failed on that count.
        const failedBefore = load.failedSoFar();
        const until = Date.now() + DB_OUTAGE_MS;
        const atMost = until + 30_000;
        const felt = () => load.failedSoFar() > failedBefore;
        while (Date.now() < until || (!felt() && Date.now() < atMost)) {
          terminated += await sessions.endAllBut(admin, dbName, watchId);
          const started = await watch.query(
            `SELECT COUNT(*) AS n FROM idempotency_records WHERE state = 'started' AND idempotency_key LIKE ${placeholder(kind, 0)}`,
            [`key-${prefix}%`],
          );
          committedStarts = Math.max(committedStarts, Number(started[0].n));
          await sleep(100);
        }
        await sleep(3000);
        const outcomes = await load.stop();
        ds = await openDataSource(db.url);
        expect(terminated).toBeGreaterThan(0);
        expect(committedStarts).toBe(0);
        // The drop was felt (failed attempts), and every process serves again by itself.
        const failed = failures(outcomes);
        expect(failed.length).toBeGreaterThan(0);
        // A lost connection is the database's failure, not the request's: every 5xx is a 503
        // (Retry-After), never a 500 (before: the handler's own statement or OutboxService's
        // "no transaction" check on a released runner answered 500).
        expectOnly503(failed);
        await eachProcessServes(prefix, outcomes);
        const report = await assertInvariants(scenario(prefix), outcomes, 120_000);
        process.stdout.write(
          `[faults] ${kind} database outage ${DB_OUTAGE_MS} ms: ${terminated} sessions ended, ${report.keys} payments, failed attempts ${statusCounts(failed)}\n`,
        );
      } finally {
        await load.stop();
        await admin.destroy();
        await watch.destroy();
        if (!ds.isInitialized) ds = await openDataSource(db.url);
      }
    });

    it(`database server gone for ${DB_DOWN_MS / 1000} s under load and back: 503 with Retry-After while it is gone, recovery without help, nothing lost or doubled`, async () => {
      const prefix = `os${rand()}-`;
      const load = steadyLoad(prefix, () => apps.map((a) => a.url));
      try {
        await sleep(2000);
        const before = load.outcomes.length;
        await dbProxy.cut();
        await sleep(DB_DOWN_MS / 2);
        // Halfway through: a new request to each process is refused for now, 503 + Retry-After.
        const whileGone: Attempt[] = [];
        for (const app of apps) {
          const c = `${prefix}gone-${rand()}`;
          whileGone.push(await postOnce(app.url, keyOf(c), paymentBody(c)));
        }
        await sleep(DB_DOWN_MS / 2);
        await dbProxy.restore();
        await sleep(3000);
        const outcomes = await load.stop();
        expect(whileGone.map((a) => [a.status, !!header(a, 'retry-after')])).toEqual(
          apps.map(() => [503, true]),
        );
        expect(load.outcomes.length).toBeGreaterThan(before);
        const failed = failures(outcomes);
        expect(failed.length).toBeGreaterThan(0);
        expectOnly503(failed);
        await eachProcessServes(prefix, outcomes);
        // The keys probed while the server was gone were never created: no payment, no event.
        const report = await assertInvariants(scenario(prefix), outcomes, 120_000);
        process.stdout.write(
          `[faults] ${kind} database server gone ${DB_DOWN_MS} ms: ${report.keys} payments, failed attempts ${statusCounts(failed)}\n`,
        );
      } finally {
        await load.stop();
        await dbProxy.restore();
      }
    });
  },
);

/** The library's events a sample-app process logged (LOG_FORMAT=json), by name. */
function loggedEvents(app: AppProcess, event: string): Array<Record<string, unknown>> {
  const found: Array<Record<string, unknown>> = [];
  for (const line of app.output().split('\n')) {
    if (!line.includes(`"${event}"`)) continue;
    try {
      const m = JSON.parse(line).message;
      if (m && m.event === event) found.push(m);
    } catch {
      // not a JSON line
    }
  }
  return found;
}

/** The value of an attribute-less metric in Prometheus text (undefined when absent). */
function metricValue(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.trim().split(/\s+/)[1]);
}

/** One sample-app process on its own SQLite database and RabbitMQ queue, behind `brokerUrl`. */
async function sqliteWorld(brokerUrl: () => string, env: Record<string, string>) {
  const db = await createTestDatabase('sqlite');
  const cluster = new FaultCluster(db.url, brokerUrl, { LOG_LEVEL: 'log', ...env });
  const app = await cluster.spawn();
  const ds = await openDataSource(db.url);
  const scenario = (
    prefix: string,
    live = () =>
      cluster.processes
        .filter((p) => p.child.exitCode === null && p.child.signalCode === null)
        .map((p) => p.url),
  ): Scenario => ({
    ds,
    kind: 'sqlite',
    prefix,
    live,
    queueDepth: () => cluster.queueDepth(),
  });
  return {
    db,
    ds,
    cluster,
    app,
    scenario,
    async close() {
      await cluster.stop();
      await ds.destroy();
      await db.drop();
    },
  };
}

type World = Awaited<ReturnType<typeof sqliteWorld>>;

/** `n` payments of customers `<prefix><from..>`, each client retrying until its 201. */
const payments = (app: AppProcess, prefix: string, from: number, n: number) =>
  Promise.all(
    Array.from({ length: n }, (_, i) =>
      postUntilCreated(keyOf(`${prefix}${from + i}`), `${prefix}${from + i}`, {
        target: () => app.url,
        deadlineMs: 60_000,
      }),
    ),
  );

const paymentIdOf = (o: KeyOutcome) => JSON.parse(o.created!.body!.toString('utf8')).id as string;

/** The outbox rows of a scenario's payments (status and attempts). */
const outboxRows = async (w: World, prefix: string) =>
  (await w.ds.query(
    `SELECT status, attempts, last_error AS lastError, payload FROM outbox_messages WHERE payload LIKE ?`,
    [`%"customerId":"${prefix}%`],
  )) as Array<{ status: string; attempts: number; lastError: string | null; payload: string }>;

/**
 * Issue 56, item 3, on the issue's own setup: a sample-app process on SQLite, RabbitMQ behind a
 * TCP proxy the test cuts (the machine's RabbitMQ is never touched). A publish that finds the
 * broker unreachable is no attempt: the relay backs off as a whole and resumes when the broker
 * is back. On SQLite only (the issue's setup; skipped when TEST_DATABASES leaves SQLite out, as
 * the SQL Server phase of CI does): the outage is the broker's, whatever the database, and on
 * PostgreSQL and SQL Server the multi-process case above runs with the same 3 attempts.
 */
describeEachDatabase(
  databaseKinds().filter((k) => k === 'sqlite'),
  'broker outages are not failures (sample app on %s, RabbitMQ behind a proxy)',
  () => {
    let proxy: TcpProxy;
    const worlds: World[] = [];
    const brokerUrl = () => `amqp://guest:guest@127.0.0.1:${proxy.port}`;

    beforeAll(async () => {
      proxy = await new TcpProxy(RABBIT_PORT).start();
    });

    afterAll(async () => {
      closeAgents();
      for (const w of worlds) await w.close();
      await proxy?.cut();
    });

    it('RabbitMQ unreachable for 25 s while 5 more payments are written (3 attempts; backoff 200 ms–1 s, and 20–100 ms: an outage of minutes, compressed): none dead, every payment one ledger entry within 60 s', async () => {
      const OUTAGE_MS = 25_000;
      // The issue's settings, and the same outage for a relay whose whole retry budget
      // (3 attempts × 100 ms) is 1/80 of it: what an outage of minutes is to the defaults.
      const issue = await sqliteWorld(brokerUrl, {
        OUTBOX_MAX_ATTEMPTS: '3',
        OUTBOX_BACKOFF_BASE_MS: '200',
        OUTBOX_BACKOFF_MAX_MS: '1000',
      });
      worlds.push(issue);
      const compressed = await sqliteWorld(brokerUrl, {
        OUTBOX_MAX_ATTEMPTS: '3',
        OUTBOX_BACKOFF_BASE_MS: '20',
        OUTBOX_BACKOFF_MAX_MS: '100',
      });
      worlds.push(compressed);
      const both = [issue, compressed].map((w) => ({
        w,
        prefix: `ou${rand()}-`,
        outcomes: [] as KeyOutcome[],
      }));

      for (const b of both) b.outcomes.push(...(await payments(b.w.app, b.prefix, 0, 5)));
      await proxy.cut();
      const cutAt = Date.now();
      for (const b of both) b.outcomes.push(...(await payments(b.w.app, `${b.prefix}`, 5, 5)));
      await sleep(Math.max(0, OUTAGE_MS - (Date.now() - cutAt)));

      // At the end of the outage: the events written during it wait, none has used an attempt, none is dead.
      for (const b of both) {
        const rows = await outboxRows(b.w, b.prefix);
        const during = rows.filter((r) => /"customerId":"ou[0-9a-f]+-[5-9]"/.test(r.payload));
        expect(during).toHaveLength(5);
        expect(during.map((r) => [r.status, Number(r.attempts)])).toEqual(
          during.map(() => ['pending', 0]),
        );
        for (const r of during) expect(r.lastError).toContain('the broker was unreachable');
        expect(rows.filter((r) => r.status === 'dead')).toEqual([]);
        // The relay reports the outage as backing off, not as failures.
        const health = await (await fetch(`${b.w.app.url}/health`)).json();
        expect(health.details.outbox.relayBackingOff).toMatchObject({ reason: 'broker' });
        // And in the metrics: backing off, publishes given back, no failed attempt, no dead letter.
        const metrics = await (await fetch(`${b.w.app.url}/metrics`)).text();
        expect(metricValue(metrics, 'outbox_relay_backing_off')).toBe(1);
        expect(metricValue(metrics, 'outbox_unavailable_total')).toBeGreaterThan(0);
        expect(metricValue(metrics, 'outbox_dead_total') ?? 0).toBe(0);
        expect(loggedEvents(b.w.app, 'outbox.dead')).toEqual([]);
      }

      await proxy.restore();
      for (const b of both) {
        const report = await assertInvariants(b.w.scenario(b.prefix), b.outcomes, 60_000);
        expect(report.ledgerEntries).toBe(10);
        // And as a client sees it: one ledger entry per payment.
        for (const o of b.outcomes) {
          const entries = (await (
            await fetch(`${b.w.app.url}/ledger?paymentId=${paymentIdOf(o)}`)
          ).json()) as unknown[];
          expect(entries).toHaveLength(1);
        }
      }
      for (const b of both) {
        const metrics = await (await fetch(`${b.w.app.url}/metrics`)).text();
        expect(metricValue(metrics, 'outbox_relay_backing_off')).toBe(0);
      }
      // The issue's relay said once that it backed off, and once that it recovered, with how long.
      const recovered = loggedEvents(issue.app, 'outbox.relay.recovered');
      expect(loggedEvents(issue.app, 'outbox.relay.backing-off')).toHaveLength(1);
      expect(recovered).toHaveLength(1);
      expect(recovered[0]).toMatchObject({ reason: 'broker' });
      expect(recovered[0].downMs).toBeGreaterThan(OUTAGE_MS / 2);
      for (const b of both) {
        process.stdout.write(
          `[faults] sqlite broker outage ${OUTAGE_MS} ms, backoff ${b.w === issue ? '200-1000' : '20-100'} ms, 3 attempts: 10 payments, 10 ledger entries, 0 dead, ${loggedEvents(b.w.app, 'outbox.failed').length} failed attempts logged\n`,
        );
      }
    }, 300_000);

    it("SIGTERM while the broker stops answering: the process exits (within the library's bounds, not the app's last resort), and the pending events are published after a restart", async () => {
      const w = await sqliteWorld(brokerUrl, {
        OUTBOX_SHUTDOWN_TIMEOUT_MS: '2000',
        // The sample app's last resort, above the library's bounds: the test fails if it fires.
        SHUTDOWN_TIMEOUT_MS: '20000',
      });
      worlds.push(w);
      const prefix = `sd${rand()}-`;
      const outcomes = await payments(w.app, prefix, 0, 1);
      await eventually('the first payment reached the ledger', async () =>
        (await outboxRows(w, prefix)).every((r) => r.status === 'sent'),
      );
      // The broker stops answering: connections stay open, nothing comes back.
      proxy.freeze();
      try {
        outcomes.push(...(await payments(w.app, prefix, 1, 2)));
        await sleep(2000);
        const stopping = w.app.kill('SIGTERM');
        // A deadline far above the configured bounds (relay 2 s, RabbitMQ close 5 s each): the
        // assertion is that it exits at all (before: still alive after minutes).
        const deadline = sleep(90_000).then(() => 'still running' as const);
        const outcome = await Promise.race([stopping.then(() => 'exited' as const), deadline]);
        if (outcome !== 'exited') w.app.child.kill('SIGKILL');
        expect(outcome).toBe('exited');
        await exited(w.app);
        expect(w.app.output()).not.toContain('(SHUTDOWN_TIMEOUT_MS): exiting');
        expect(loggedEvents(w.app, 'outbox.relay.stopped')).toHaveLength(1);
        // Nothing lost: the events not published are still pending (none dead, none sent).
        const rows = await outboxRows(w, prefix);
        expect(rows.map((r) => r.status).sort()).toEqual(['pending', 'pending', 'sent']);
      } finally {
        await proxy.restore();
      }
      // A new process on the same database and queue publishes them: one ledger entry each.
      await w.cluster.spawn();
      const report = await assertInvariants(w.scenario(prefix), outcomes, 60_000);
      expect(report.ledgerEntries).toBe(3);
    }, 300_000);
  },
);
