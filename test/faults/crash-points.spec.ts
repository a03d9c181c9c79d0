import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import type { AppProcess, Platform } from '../support/sample-app';
import { closeAgents, type KeyOutcome, postUntilCreated, sleep } from './support/fault-client';
import {
  describeEachDatabase,
  diedAt,
  exited,
  FAULT_TRIALS,
  FaultCluster,
  isAlive,
} from './support/fault-cluster';
import { assertInvariants, keyOf, type Scenario } from './support/invariants';

/**
 * Crash points: real sample-app processes (dist/) kill themselves with SIGKILL at a fault point
 * (a diagnostics channel heard by test/support/crash-on-channel.js, preloaded only when
 * EO_TEST_FAULTS is set) while real clients talk to them; the clients retry with their keys as a
 * careful client does (connection error / 5xx / 409: back off, honour Retry-After, try a
 * surviving process), then the invariants are checked.
 *
 * Each trial is a fresh process killed for real, with a burst of BURST concurrent requests (one
 * key each) in flight; the point fires on a random pass (`point@N`), so the other requests of
 * the burst are caught at every other stage (not yet reserved, in the handler, committed,
 * answered).
 */
const BURST = 6;
const LEASE_MS = 1500;
/**
 * A killed relay's batch is published again once its lease lapses: a short one keeps trials
 * short. SQL Server (Babelfish) gets a longer one: a statement on a pooled connection it has not
 * used yet can start a second late there, and the trial must still find the victim's batch under
 * its lease when it looks right after the kill.
 */
const relayEnv = (kind: Kind) => ({
  OUTBOX_LEASE_MS: kind === 'mssql' ? '5000' : '2000',
  OUTBOX_PUBLISH_TIMEOUT_MS: '1000',
});
type Mode = 'transactional' | 'leased';
type Kind = TestDatabase['kind'];
const MODE_ENV: Record<Mode, Record<string, string>> = {
  transactional: { IDEMPOTENCY_MODE: 'transactional' },
  leased: { IDEMPOTENCY_MODE: 'leased', IDEMPOTENCY_LEASE_MS: String(LEASE_MS) },
};

interface CrashPoint {
  point: string;
  /** Modes the trials alternate through. */
  modes: Mode[];
  /** Passes the point may fire on (`point@N`, N drawn from 1..maxPass). */
  maxPass: number;
  /** The point is reached after the HTTP answer (relay, consumer): wait for the death between bursts. */
  async?: boolean;
}

const POINTS: CrashPoint[] = [
  { point: 'gate.after-reservation-commit', modes: ['leased'], maxPass: BURST },
  { point: 'payments.in-handler', modes: ['transactional', 'leased'], maxPass: BURST },
  { point: 'gate.after-commit', modes: ['transactional', 'leased'], maxPass: BURST },
  { point: 'gate.mid-response', modes: ['transactional', 'leased'], maxPass: BURST },
  { point: 'relay-after-publish', modes: ['transactional'], maxPass: 1, async: true },
  { point: 'ledger.in-handler', modes: ['transactional'], maxPass: 2, async: true },
];

/** How one database hosts the trials: where victims come from and where retries go. */
interface TrialPlan {
  mode: Mode;
  platform: Platform;
  /** The pass on which the point fires (`point@pass`). */
  pass: number;
}

interface Cast {
  /** Victims may boot while the previous trial runs (processes side by side). */
  spawnAhead: boolean;
  /** Starts the trial's victim, armed with `spec`, on Express or Fastify. */
  victim(spec: string, mode: Mode, platform: Platform): Promise<AppProcess>;
  /** Resolves when no outbox message is pending and the queue is empty. */
  drained(): Promise<void>;
  /** Outbox messages still pending under a lease the victim's relay took. */
  pendingLeasedBy(victim: AppProcess): Promise<number>;
  /** Where a retry goes once the first attempt (at the victim) failed. */
  survivor(mode: Mode, victim: AppProcess, attempt: number): Promise<string>;
}

const rand = () => randomBytes(3).toString('hex');

async function drained(ds: DataSource, cluster: FaultCluster): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const rows = await ds.query(
      `SELECT COUNT(*) AS n FROM outbox_messages WHERE status = 'pending'`,
    );
    if (Number(rows[0].n) === 0 && (await cluster.queueDepth()) === 0) return;
    await sleep(100);
  }
  throw new Error('the outbox and the queue did not drain in 60 s');
}

/** Lease owners are `<host>/<pid>/<random>#<batch>`. */
async function pendingLeasedBy(ds: DataSource, kind: Kind, victim: AppProcess): Promise<number> {
  const rows = await ds.query(
    `SELECT COUNT(*) AS n FROM outbox_messages WHERE status = 'pending' AND lease_owner LIKE ${placeholder(kind, 0)}`,
    [`%/${victim.child.pid}/%`],
  );
  return Number(rows[0].n);
}

/**
 * One trial: bursts of requests at the victim until it has died at its point (the first burst
 * does it for the gate points; the relay and the consumer die a moment after the answers).
 */
async function trial(
  cast: Cast,
  cp: CrashPoint,
  plan: TrialPlan,
  victim: AppProcess,
  prefix: string,
): Promise<KeyOutcome[]> {
  const { mode } = plan;
  const outcomes: KeyOutcome[] = [];
  // Counted the moment the victim is gone, before its lease can lapse and another relay re-claim
  // the batch (the bursts' retries may still be running then).
  const leasedAtDeath =
    cp.point === 'relay-after-publish'
      ? exited(victim).then(() => cast.pendingLeasedBy(victim))
      : undefined;
  leasedAtDeath?.catch(() => undefined);
  for (let round = 0; round < 5 && isAlive(victim); round++) {
    const customers = Array.from({ length: BURST }, (_, i) => `${prefix}${rand()}-${round}-${i}`);
    outcomes.push(
      ...(await Promise.all(
        customers.map((c) =>
          postUntilCreated(keyOf(c), c, {
            target: (attempt) =>
              attempt === 0 && isAlive(victim) ? victim.url : cast.survivor(mode, victim, attempt),
          }),
        ),
      )),
    );
    if (cp.async) await Promise.race([exited(victim), sleep(4000)]);
  }
  const died = await diedAt(victim, cp.point, 10_000);
  if (died && cp.point === 'relay-after-publish') {
    // Its batch was published and is still pending under its lease: another relay publishes it again.
    expect(await leasedAtDeath).toBeGreaterThan(0);
  }
  if (died && !cp.async) {
    // The crash caught requests in flight: their clients had to retry.
    expect(outcomes.some((o) => o.attempts.length > 1)).toBe(true);
  }
  if (!died) {
    throw new Error(
      `the victim did not die at ${cp.point}@${plan.pass}:\n${victim.output().slice(-3000)}`,
    );
  }
  return outcomes;
}

function crashScenarios(
  label: string,
  trials: number,
  setup: () => { cast: Cast; scenario: (prefix: string) => Scenario },
) {
  describe.each(POINTS)(`${label}: SIGKILL at $point`, (cp) => {
    it(`${trials} trials, each a fresh process killed for real; every invariant holds`, async () => {
      const { cast, scenario } = setup();
      const prefix = `cx${rand()}-`;
      const outcomes: KeyOutcome[] = [];
      const stats = { answeredBeforeKill: 0, retried: 0 };
      const plans: TrialPlan[] = Array.from({ length: trials }, (_, t) => ({
        mode: cp.modes[t % cp.modes.length],
        // The victims alternate between Express and Fastify (the capture and release of the
        // answer differ); the survivors run Express.
        platform: Math.floor(t / cp.modes.length) % 2 ? 'fastify' : 'express',
        pass: 1 + Math.floor(Math.random() * cp.maxPass),
      }));
      const start = (p: TrialPlan) => cast.victim(`${cp.point}@${p.pass}`, p.mode, p.platform);
      // The next victim boots while this trial runs, where it cannot take part early: a gate
      // point is only reached by requests sent to it, a relay or consumer point is not.
      const ahead = cast.spawnAhead && !cp.async;
      let next: Promise<AppProcess> | undefined;
      for (let t = 0; t < trials; t++) {
        // A relay or consumer victim starts once the previous trial's events are all delivered,
        // so that it reaches its point with this trial's messages, not while it boots.
        if (cp.async) await cast.drained();
        const victim = await (next ?? start(plans[t]));
        next = ahead && t + 1 < trials ? start(plans[t + 1]) : undefined;
        next?.catch(() => undefined);
        const got = await trial(cast, cp, plans[t], victim, `${prefix}${t}-`);
        for (const o of got) {
          if (o.attempts.length === 1) stats.answeredBeforeKill++;
          else stats.retried++;
        }
        outcomes.push(...got);
      }
      const report = await assertInvariants(scenario(prefix), outcomes);
      // At least some requests were caught by the crash and had to be retried.
      if (!cp.async) expect(stats.retried).toBeGreaterThan(0);
      process.stdout.write(
        `[faults] ${label} ${cp.point}: ${trials} kills, ${report.keys} keys (${stats.retried} retried after the crash), ${report.payments} payments, ${report.ledgerEntries} ledger entries\n`,
      );
    });
  });
}

const serverKinds = databaseKinds().filter((k) => k === 'postgres' || k === 'mssql');

describeEachDatabase(serverKinds, 'crash points on %s (processes side by side)', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let cluster: FaultCluster;
  const survivors: Partial<Record<Mode, AppProcess>> = {};

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    cluster = new FaultCluster(db.url, undefined, relayEnv(kind));
    // The first process runs the migrations; then the survivor of the other mode.
    survivors.transactional = await cluster.spawn(MODE_ENV.transactional);
    survivors.leased = await cluster.spawn(MODE_ENV.leased);
    ds = await openDataSource(db.url);
  }, 120_000);

  afterAll(async () => {
    closeAgents();
    await cluster?.stop();
    await ds?.destroy();
    await db?.drop();
  });

  crashScenarios(kind, FAULT_TRIALS, () => ({
    cast: {
      spawnAhead: true,
      pendingLeasedBy: (victim) => pendingLeasedBy(ds, kind, victim),
      drained: () => drained(ds, cluster),
      victim: (spec, mode, platform) =>
        cluster.victim(spec, { ...MODE_ENV[mode], HTTP_PLATFORM: platform }),
      survivor: async (mode) => survivors[mode]!.url,
    },
    scenario: (prefix) => ({
      ds,
      kind,
      prefix,
      live: () => [survivors.transactional!.url],
      queueDepth: () => cluster.queueDepth(),
    }),
  }));
});

/**
 * SQLite: one process at a time (one writer; the library serializes transactions inside a
 * process, not across processes). The victim runs alone; once it is dead its successor starts
 * on the same file and serves the retries, republishes what the victim's relay left under lease
 * and gets the consumer's redeliveries.
 */
describeEachDatabase(
  databaseKinds().filter((k) => k === 'sqlite'),
  'crash points on %s (one process at a time)',
  (kind) => {
    let db: TestDatabase;
    let ds: DataSource;
    let cluster: FaultCluster;
    let successor: { mode: Mode; process: Promise<AppProcess> } | undefined;

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      cluster = new FaultCluster(db.url, undefined, relayEnv(kind));
      await (await cluster.spawn()).kill(); // runs the migrations
      ds = await openDataSource(db.url);
    }, 120_000);

    afterAll(async () => {
      closeAgents();
      await cluster?.stop();
      await ds?.destroy();
      await db?.drop();
    });

    crashScenarios(kind, Math.max(1, Math.ceil(FAULT_TRIALS / 2)), () => ({
      cast: {
        spawnAhead: false,
        pendingLeasedBy: (victim) => pendingLeasedBy(ds, kind, victim),
        drained: () => drained(ds, cluster),
        victim: async (spec, mode, platform) => {
          if (successor) {
            // Let the successor publish every pending event first: a victim armed with
            // relay-after-publish would otherwise die on a leftover batch while it boots.
            await drained(ds, cluster);
            await (await successor.process).kill('SIGTERM');
          }
          const victim = await cluster.victim(spec, { ...MODE_ENV[mode], HTTP_PLATFORM: platform });
          const next = exited(victim).then(() => cluster.spawn(MODE_ENV[mode]));
          successor = { mode, process: next };
          return victim;
        },
        survivor: async () => (await successor!.process).url,
      },
      scenario: (prefix) => ({
        ds,
        kind,
        prefix,
        live: async () => [(await successor!.process).url],
        queueDepth: () => cluster.queueDepth(),
      }),
    }));
  },
);
