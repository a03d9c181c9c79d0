import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import type { AppProcess } from '../support/sample-app';
import { consumerCounter, publishCopies, storedEvents } from './support/broker';
import {
  type Attempt,
  closeAgents,
  header,
  type KeyOutcome,
  paymentBody,
  pool,
  postOnce,
  postUntilCreated,
  sleep,
  warmPools,
} from './support/fault-client';
import { describeEachDatabase, FaultCluster, MSSQL_POOL } from './support/fault-cluster';
import { assertInvariants, keyOf, type Scenario } from './support/invariants';

/**
 * Storms against real sample-app processes on one database: a same-key storm over 4 processes,
 * 10,000 distinct keys with random client retries over 4 processes, and duplicate deliveries
 * pushed straight into RabbitMQ. SQLite runs them on its one process.
 */
/**
 * Concurrent requests per process in a same-key storm: 200 (FAULT_STORM_PER_PROCESS). On
 * Babelfish (MSSQL_URL) 50: 800 requests at once over 4 processes and one 2-core machine made the
 * T-SQL engine answer past the client's 60 s (CI of 2026-11-26: ECONNRESET, time-outs and 503s,
 * no doubled payment); 200 at once over 4 processes is still a storm on one key. On a new
 * Babelfish cluster (`.ci/sqlserver.sh` makes one per suite) the whole file took 125 s with pools
 * of 4 connections per process and 787 s, with a failure, with pools of 10 (2026-11-27,
 * fault-cluster.ts says why); a cluster that earlier runs had filled with created and dropped
 * databases took 732 s (2026-11-26).
 */
const stormPerProcess = (kind: string) =>
  Math.max(1, Number(process.env.FAULT_STORM_PER_PROCESS ?? (kind === 'mssql' ? 50 : 200)));
/**
 * Distinct keys of the key storm: 10,000 across the 4 processes on PostgreSQL
 * (FAULT_STORM_KEYS). Babelfish (SQL Server over PostgreSQL, MSSQL_URL) serves about a tenth of
 * PostgreSQL's rate on these machines, and SQLite runs one process (one writer), where 10,000
 * keys only repeat the same single-process case for a minute of the suite's 10-minute budget:
 * 2,000 there and 1,000 on Babelfish unless FAULT_STORM_KEYS says otherwise. On Babelfish a
 * payment costs the server about 90 ms of CPU (its T-SQL parser; 2-core VM, 2026-11-27): 500 keys
 * took 19 s on warm pools of 4 connections per process (fault-cluster.ts), and 1,000 keys begun on
 * cold pools of 10 ran past the 5-minute retry deadline (CI of e2378fb).
 */
const keysFor = (kind: string) =>
  Math.max(
    100,
    Number(
      process.env.FAULT_STORM_KEYS ??
        (kind === 'postgres' ? 10_000 : kind === 'mssql' ? 1000 : 2000),
    ),
  );
const DUPLICATED_EVENTS = 200;
const COPIES = 5;

const rand = () => randomBytes(3).toString('hex');

/** The outcome of a same-key storm: every answer, then the one key's checks. */
async function sameKeyStorm(
  targets: string[],
  prefix: string,
  perProcess: number,
  mode: 'transactional' | 'leased',
  busyAllowed: boolean,
): Promise<{ outcome: KeyOutcome; statuses: Map<number | string, number> }> {
  const customerId = `${prefix}one`;
  const key = keyOf(customerId);
  const body = paymentBody(customerId);
  // The first one to reserve holds the key for 200 ms inside its handler (X-Demo-Delay-Ms, not
  // part of the fingerprint): the storm meets it in flight, then completed.
  const answers: Attempt[] = await Promise.all(
    targets.flatMap((t) =>
      Array.from({ length: perProcess }, () =>
        postOnce(t, key, body, { 'x-demo-delay-ms': '200' }),
      ),
    ),
  );
  const statuses = new Map<number | string, number>();
  for (const a of answers) {
    statuses.set(a.status ?? a.error!, (statuses.get(a.status ?? a.error!) ?? 0) + 1);
  }
  // Every answer is the 201 (the original or its replay) or 409 in progress; nothing else. On
  // Babelfish also a 503 with Retry-After (the database did not answer within the driver's
  // time-out; nothing committed, the client retries): CI of 2026-11-26 10:13 UTC saw it there.
  const allowed = busyAllowed ? [201, 409, 503] : [201, 409];
  expect([...statuses.keys()].filter((s) => !allowed.includes(s as number))).toEqual([]);
  for (const a of answers.filter((x) => x.status === 503)) {
    expect(Number(header(a, 'retry-after'))).toBeGreaterThanOrEqual(1);
  }
  const created = answers.filter((a) => a.status === 201);
  expect(created.length).toBeGreaterThanOrEqual(1);
  expect(new Set(created.map((a) => a.body!.toString('utf8'))).size).toBe(1);
  expect(created.filter((a) => header(a, 'idempotency-replayed') !== 'true').length).toBe(1);
  // A 409 says the key is in flight; in leased mode it may also say that this attempt's lease
  // lapsed before it completed and a duplicate took the key over (its work rolled back, the
  // retry gets the one answer): seen on Babelfish in CI (2026-11-26), where 200 requests at once
  // on a 2-core machine kept the first attempt from renewing its 10 s lease in time.
  const conflict = mode === 'leased' ? /in-progress|lease-lost/ : /in-progress/;
  for (const a of answers.filter((x) => x.status === 409)) {
    expect(JSON.parse(a.body!.toString('utf8')).type).toMatch(conflict);
    expect(Number(header(a, 'retry-after'))).toBeGreaterThanOrEqual(1);
  }
  return { outcome: { key, customerId, attempts: answers, created: created[0] }, statuses };
}

/**
 * 10,000 keys (FAULT_STORM_KEYS), each a client that sends its payment to a random process and
 * retries until it has its 201; at random a client also fires a concurrent duplicate at another
 * process (a timed-out first try racing its retry), or repeats the request after its 201 (the
 * answer was lost on the way). Bounded: keep-alive agents, 48 clients at a time.
 */
async function keyStorm(
  targets: string[],
  prefix: string,
  keys: number,
  deadlineMs: number,
): Promise<KeyOutcome[]> {
  const target = () => targets[Math.floor(Math.random() * targets.length)];
  const policy = { target, deadlineMs };
  const racing: Array<Promise<KeyOutcome>> = [];
  const outcomes = await pool(
    Array.from({ length: keys }, (_, i) => `${prefix}${i}`),
    48,
    async (customerId) => {
      const key = keyOf(customerId);
      const dice = Math.random();
      if (dice < 0.15) racing.push(postUntilCreated(key, customerId, policy));
      const o = await postUntilCreated(key, customerId, policy);
      if (dice > 0.85) {
        const again = await postUntilCreated(key, customerId, policy);
        o.attempts.push(...again.attempts);
      }
      return o;
    },
  );
  // A racing duplicate is the same client's key: its answers belong to that key's outcome.
  const byKey = new Map(outcomes.map((o) => [o.key, o]));
  for (const r of await Promise.all(racing)) {
    const o = byKey.get(r.key)!;
    o.attempts.push(...r.attempts);
    if (!r.created) o.created = undefined;
  }
  return outcomes;
}

interface Topology {
  /** API processes. */
  processes: number;
}

describeEachDatabase(
  databaseKinds().filter((k) => k === 'postgres' || k === 'mssql' || k === 'sqlite'),
  'storms on %s',
  (kind) => {
    // SQLite: one process (one writer); the others: 4 API processes on one database.
    const topology: Topology = { processes: kind === 'sqlite' ? 1 : 4 };
    const KEYS = keysFor(kind);
    const PER_PROCESS = stormPerProcess(kind);
    // Connections to open per process before a storm: the whole pool (fault-cluster.ts).
    const POOL = kind === 'mssql' ? MSSQL_POOL : 10;
    let db: TestDatabase;
    let ds: DataSource;
    let cluster: FaultCluster;
    let apps: AppProcess[] = [];

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      cluster = new FaultCluster(db.url);
      apps = [await cluster.spawn()]; // runs the migrations
      for (let i = 1; i < topology.processes; i++) apps.push(await cluster.spawn());
      ds = await openDataSource(db.url);
      await warmPools(
        apps.map((a) => a.url),
        POOL,
      );
    }, 180_000);

    afterAll(async () => {
      closeAgents();
      await cluster?.stop();
      await ds?.destroy();
      await db?.drop();
    });

    const scenario = (prefix: string, live = () => apps.map((a) => a.url)): Scenario => ({
      ds,
      kind,
      prefix,
      live,
      queueDepth: () => cluster.queueDepth(),
    });

    it(`${topology.processes} process(es) × ${PER_PROCESS} concurrent requests with one key, transactional mode: one payment, every answer the same 201 or 409`, async () => {
      const prefix = `st${rand()}-`;
      const { outcome, statuses } = await sameKeyStorm(
        apps.map((a) => a.url),
        prefix,
        PER_PROCESS,
        'transactional',
        kind === 'mssql',
      );
      await assertInvariants(scenario(prefix), [outcome]);
      process.stdout.write(
        `[faults] ${kind} same-key storm (transactional): ${JSON.stringify(Object.fromEntries(statuses))}\n`,
      );
    });

    it(`${topology.processes} process(es) × ${PER_PROCESS} concurrent requests with one key, leased mode: one payment, every answer the same 201 or 409`, async () => {
      const leased: AppProcess[] = [];
      try {
        // The transactional processes step aside for the leased ones: SQLite has one writer, and
        // on the other databases eight processes' pools beside the fault suite's other file came
        // within one connection of PostgreSQL's max_connections (100: 99 client backends seen
        // with crash-points beside it; a CI run of 2026-11-29 answered one request of this
        // storm 503, a connection the server refused, most likely for that).
        await Promise.all(apps.map((a) => a.kill('SIGTERM')));
        if (kind === 'sqlite') leased.push(await cluster.spawn({ IDEMPOTENCY_MODE: 'leased' }));
        else {
          leased.push(
            ...(await Promise.all(apps.map(() => cluster.spawn({ IDEMPOTENCY_MODE: 'leased' })))),
          );
        }
        await warmPools(
          leased.map((a) => a.url),
          POOL,
        );
        const prefix = `sl${rand()}-`;
        const { outcome, statuses } = await sameKeyStorm(
          leased.map((a) => a.url),
          prefix,
          PER_PROCESS,
          'leased',
          kind === 'mssql',
        );
        await assertInvariants(
          scenario(prefix, () => leased.map((a) => a.url)),
          [outcome],
        );
        process.stdout.write(
          `[faults] ${kind} same-key storm (leased): ${JSON.stringify(Object.fromEntries(statuses))}\n`,
        );
      } finally {
        await Promise.all(leased.map((a) => a.kill('SIGTERM')));
        apps = [await cluster.spawn()];
        for (let i = 1; i < topology.processes; i++) apps.push(await cluster.spawn());
      }
    });

    it(`${KEYS} distinct keys across ${topology.processes} process(es) with random retries: each key exactly one payment, one ledger entry`, async () => {
      const prefix = `sk${rand()}-`;
      // The leased storm before this one kept these processes idle for minutes: their pools may
      // have closed idle connections (the driver's 30 s), and a storm must meet a running
      // service's warm pool, not a cold start (warmPools).
      await warmPools(
        apps.map((a) => a.url),
        POOL,
      );
      const started = Date.now();
      // Each client retries until its 201 for 90 s (5 minutes on Babelfish, where a loaded
      // attempt can wait out the driver's 15 s time-out and answer 503 a few times in a row).
      const outcomes = await keyStorm(
        apps.map((a) => a.url),
        prefix,
        KEYS,
        kind === 'mssql' ? 300_000 : 90_000,
      );
      const elapsed = Date.now() - started;
      const attempts = outcomes.reduce((n, o) => n + o.attempts.length, 0);
      const report = await assertInvariants(scenario(prefix), outcomes, 300_000);
      process.stdout.write(
        `[faults] ${kind} key storm: ${report.keys} keys, ${attempts} requests in ${elapsed} ms, ${report.payments} payments, ${report.ledgerEntries} ledger entries\n`,
      );
    }, 900_000);

    it(`duplicate deliveries from the broker: ${DUPLICATED_EVENTS} events published ${COPIES} more times straight to RabbitMQ give one ledger entry each`, async () => {
      const prefix = `sd${rand()}-`;
      const before = await consumerCounter(apps, 'inbox_duplicates');
      // Payments whose events the relay publishes as usual; the copies race it and follow it.
      const outcomes = await pool(
        Array.from({ length: DUPLICATED_EVENTS }, (_, i) => `${prefix}${i}`),
        16,
        (c, i) => postUntilCreated(keyOf(c), c, { target: () => apps[i % apps.length].url }),
      );
      const events = await storedEvents(ds, kind, prefix);
      expect(events).toHaveLength(DUPLICATED_EVENTS);
      expect(await publishCopies(cluster.queue, events, COPIES)).toBe(DUPLICATED_EVENTS * COPIES);
      await assertInvariants(scenario(prefix), outcomes);
      // The consumers saw the copies and the inbox skipped them.
      // Each event arrived COPIES + 1 times (at least): one ran the handler, the others were skipped.
      // The consumers work through the copies at the database's pace: up to 2 minutes.
      let skipped = 0;
      for (const until = Date.now() + 120_000; ; await sleep(250)) {
        skipped = (await consumerCounter(apps, 'inbox_duplicates')) - before;
        if (skipped >= DUPLICATED_EVENTS * COPIES || Date.now() > until) break;
      }
      expect(skipped).toBeGreaterThanOrEqual(DUPLICATED_EVENTS * COPIES);
      process.stdout.write(
        `[faults] ${kind} duplicate deliveries: ${DUPLICATED_EVENTS * COPIES} copies, ${skipped} skipped by the inbox\n`,
      );
    });
  },
);
