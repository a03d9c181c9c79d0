import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import {
  type AppProcess,
  appSetupTimeoutMs,
  spawnSampleApp,
  warmSampleAppPool,
} from '../support/sample-app';
import { keyHashOf } from '../../lib/gate/idempotency-context';
import { type Answer, ledgerRows, paymentCount, postJson, sleep } from '../fixtures/gate/http';
import { paymentsScope } from '../fixtures/gate/ledger';

/**
 * The sample app as real OS processes (dist/sample-app/main.js, built by `npm test`) on one
 * database: a same-key storm spread over three processes, and processes killed with SIGKILL
 * while a request is inside its handler, in both execution modes.
 */
const LEASE_MS = 3000;
/**
 * The leased processes' lease. On SQL Server (Babelfish) a kill, the check that the killed
 * handler's payment is gone and the first retry take seconds on a loaded 2-core machine: a 3 s
 * lease could lapse before the retry that must meet it (409) arrives.
 */
const leaseMsOf = (kind: string): number => (kind === 'mssql' ? 8000 : LEASE_MS);
/** Debug logs carry `idempotency.reserved` (with the key's hash), which the crash tests wait for. */
const DEBUG = { LOG_LEVEL: 'debug' };
const serverKinds = databaseKinds().filter((k) => k !== 'sqlite');

const body = (customerId: string) => ({ amount: 9.99, currency: 'USD', customerId });
const customer = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/** Sends a request that will still be inside its handler (after the payment insert) for `delayMs`. */
function slowRequest(
  app: AppProcess,
  key: string,
  customerId: string,
  delayMs = 8000,
): Promise<Answer | { failed: string }> {
  return postJson(`${app.url}/payments`, key, body(customerId), {
    'x-demo-delay-ms': String(delayMs),
  }).catch((e: unknown) => ({
    failed: String(e),
  }));
}

/** Waits until the ledger holds a committed started record for `key` (leased mode commits it before the handler runs). */
async function committedStart(
  ds: DataSource,
  kind: TestDatabase['kind'],
  key: string,
): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await ledgerRows(ds, kind, key)).some((r) => r.state === 'started')) return;
    await sleep(10);
  }
  throw new Error('no committed started record appeared');
}

/**
 * Waits until `app` logged the reservation of `key` (LOG_LEVEL=debug: `idempotency.reserved`
 * with the key's hash): its handler is running and its transaction holds the key.
 */
async function reservedBy(app: AppProcess, key: string): Promise<void> {
  const marker = `"event":"idempotency.reserved","keyHash":"${keyHashOf(paymentsScope(), key)}"`;
  for (let i = 0; i < 1000 && !app.output().includes(marker); i++) await sleep(10);
  if (!app.output().includes(marker)) {
    throw new Error(`the victim never reserved the key:\n${app.output().slice(-2000)}`);
  }
}

/** Opens a few pooled connections in each process, so that first-connection latency does not race the leases. */
async function warmUp(apps: AppProcess[]): Promise<void> {
  await Promise.all(
    apps.flatMap((a) =>
      [1, 2, 3].map(() =>
        fetch(`${a.url}/payments?customerId=warm-up`).then((r) => r.arrayBuffer()),
      ),
    ),
  );
}

/** Every pooled connection of each process opened and used by the gate once (see warmSampleAppPool). */
async function warmReservations(apps: AppProcess[], connections = 10): Promise<void> {
  await Promise.all(apps.map((a) => warmSampleAppPool(a.url, connections)));
}

/** Retries like a client honouring Retry-After, until the answer is not a 409; returns every answer. */
async function retryUntilSettled(
  app: AppProcess,
  key: string,
  customerId: string,
): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < 40; i++) {
    const a = await postJson(`${app.url}/payments`, key, body(customerId));
    answers.push(a);
    if (a.status !== 409) return answers;
    await sleep(Math.min(Number(a.headers.get('retry-after') ?? 1) * 1000, 250));
  }
  return answers;
}

interface CrashCast {
  /** Receives the slow request and is killed with SIGKILL inside the handler. */
  victim: AppProcess;
  /** Serves the retries. */
  survivor: AppProcess;
  /** Receives the duplicate that shows the victim holds the key (transactional mode). */
  witness: AppProcess;
}

/** The crash scenario of one execution mode. */
function crashTests(
  ctx: () => { kind: TestDatabase['kind']; ds: DataSource },
  cast: () => CrashCast,
  mode: 'transactional' | 'leased',
  leaseMs = LEASE_MS,
) {
  if (mode === 'transactional') {
    it('transactional: after SIGKILL mid-handler, the key is free for a retry on another process without waiting out any lease, and one payment exists', async () => {
      const { kind, ds } = ctx();
      const { victim, survivor, witness } = cast();
      const key = randomUUID();
      const c = customer('kill-tx');
      const doomed = slowRequest(victim, key, c);
      await reservedBy(victim, key);
      await sleep(300); // now inside the handler: payment inserted, sleeping in X-Demo-Delay-Ms
      // Another process sees the key as in flight: its uncommitted reservation answers duplicates 409.
      const dup = await postJson(`${witness.url}/payments`, key, body(c));
      expect(dup.status).toBe(409);

      await victim.kill('SIGKILL');
      expect(await doomed).toHaveProperty('failed'); // the client of the killed process got no answer

      // The database rolls the dead process's transaction back as soon as it sees its connection
      // close (normally before this retry arrives; on a loaded machine a moment later). Nothing
      // was committed, so there is no lease to wait out: the sample app's lease is 60 s, the
      // retries below give up after ~10 s.
      const answers = await retryUntilSettled(survivor, key, c);
      const retry = answers[answers.length - 1];
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotency-replayed')).toBeNull();
      expect(await paymentCount(ds, kind, c)).toBe(1);
      const replay = await postJson(`${survivor.url}/payments`, key, body(c));
      expect(replay.headers.get('idempotency-replayed')).toBe('true');
      expect(replay.bytes.equals(retry.bytes)).toBe(true);
    });
  } else {
    it(`leased: after SIGKILL mid-handler, retries get 409 with Retry-After until the ${leaseMs} ms lease lapses, then one takes over`, async () => {
      const { kind, ds } = ctx();
      const { victim, survivor } = cast();
      const key = randomUUID();
      const c = customer('kill-leased');
      const doomed = slowRequest(victim, key, c);
      await committedStart(ds, kind, key);

      await victim.kill('SIGKILL');
      expect(await doomed).toHaveProperty('failed');
      expect(await paymentCount(ds, kind, c)).toBe(0); // the handler's transaction died with the process

      const answers = await retryUntilSettled(survivor, key, c);
      const first = answers[0];
      expect(first.status).toBe(409);
      expect(first.json().type).toMatch(/in-progress/);
      const retryAfter = Number(first.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(Math.ceil(leaseMs / 1000));
      const last = answers[answers.length - 1];
      expect(last.status).toBe(201);
      expect(last.headers.get('idempotency-replayed')).toBeNull();
      expect(answers.slice(0, -1).every((a) => a.status === 409)).toBe(true);

      expect(await paymentCount(ds, kind, c)).toBe(1);
      expect(await ledgerRows(ds, kind, key)).toEqual([
        expect.objectContaining({ state: 'completed' }),
      ]);
      expect(
        (await postJson(`${survivor.url}/payments`, key, body(c))).headers.get(
          'idempotency-replayed',
        ),
      ).toBe('true');
    });
  }
}

describe.each(serverKinds)('sample app processes on one %s database', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let apps: AppProcess[] = [];
  let leased: AppProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    // The first process runs the migrations; the others start on the migrated database.
    apps.push(await spawnSampleApp({ DB_URL: db.url, ...DEBUG }));
    const [b, c, l1, l2] = await Promise.all([
      spawnSampleApp({ DB_URL: db.url, ...DEBUG }),
      spawnSampleApp({ DB_URL: db.url, ...DEBUG }),
      spawnSampleApp({
        DB_URL: db.url,
        IDEMPOTENCY_MODE: 'leased',
        IDEMPOTENCY_LEASE_MS: String(leaseMsOf(kind)),
      }),
      spawnSampleApp({
        DB_URL: db.url,
        IDEMPOTENCY_MODE: 'leased',
        IDEMPOTENCY_LEASE_MS: String(leaseMsOf(kind)),
      }),
    ]);
    apps.push(b, c);
    leased = [l1, l2];
    await warmUp([...apps, ...leased]);
    ds = await openDataSource(db.url);
  }, appSetupTimeoutMs(kind));

  afterAll(async () => {
    await Promise.all([...apps, ...leased].map((a) => a.kill()));
    apps = [];
    leased = [];
    await ds?.destroy();
    await db?.drop();
  });

  it(
    'three processes under a same-key storm write exactly one payment',
    async () => {
      await warmReservations(apps);
      const key = randomUUID();
      const c = customer('storm3');
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          postJson(`${apps[i % 3].url}/payments`, key, body(c), { 'x-demo-delay-ms': '300' }),
        ),
      );
      // 201 (the first, or its replay), 409 (in flight); on an overloaded Babelfish also 503 with
      // Retry-After (the database answered too late: nothing committed, the client retries).
      const unexpected = results.filter(
        (r) =>
          r.status !== 201 &&
          r.status !== 409 &&
          !(r.status === 503 && Number(r.headers.get('retry-after')) >= 1),
      );
      expect(unexpected.map((r) => `${r.status} ${r.bytes.toString().slice(0, 200)}`)).toEqual([]);
      const created = results.filter((r) => r.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      // Every 201 is the same answer (the original or its replay).
      expect(new Set(created.map((r) => r.json().id)).size).toBe(1);
      expect(await paymentCount(ds, kind, c)).toBe(1);
      for (const app of apps) {
        const replay = await postJson(`${app.url}/payments`, key, body(c));
        expect(replay.status).toBe(201);
        expect(replay.headers.get('idempotency-replayed')).toBe('true');
        expect(replay.json().id).toBe(created[0].json().id);
      }
    },
    appSetupTimeoutMs(kind),
  );

  crashTests(
    () => ({ kind, ds }),
    () => ({ victim: apps[0], survivor: apps[1], witness: apps[2] }),
    'transactional',
  );
  crashTests(
    () => ({ kind, ds }),
    () => ({ victim: leased[0], survivor: leased[1], witness: leased[1] }),
    'leased',
    leaseMsOf(kind),
  );
});

/**
 * SQLite is single-process by design (one writer; the library serializes transactions inside
 * one process, not across processes): no multi-process storm. A crash still matters: the next
 * process on the same file must find the killed one's key free (transactional) or taken over
 * after the lease (leased). The next process is started before the kill but serves nothing
 * until the victim is dead.
 */
describe('sample app processes on one sqlite file, one at a time', () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    await (await spawnSampleApp({ DB_URL: db.url })).kill(); // runs the migrations
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('refuses to start with an unknown IDEMPOTENCY_MODE, naming the variable', async () => {
    await expect(spawnSampleApp({ DB_URL: db.url, IDEMPOTENCY_MODE: 'eventual' })).rejects.toThrow(
      /IDEMPOTENCY_MODE must be/,
    );
  });

  describe.each([
    ['transactional', {}],
    ['leased', { IDEMPOTENCY_MODE: 'leased', IDEMPOTENCY_LEASE_MS: String(LEASE_MS) }],
  ] as const)('%s mode', (mode, env) => {
    let pair: AppProcess[] = [];

    beforeAll(async () => {
      pair = await Promise.all([
        spawnSampleApp({ DB_URL: db.url, ...DEBUG, ...env }),
        spawnSampleApp({ DB_URL: db.url, ...DEBUG, ...env }),
      ]);
      await warmUp(pair);
    });

    afterAll(async () => {
      await Promise.all(pair.map((a) => a.kill()));
    });

    // The duplicate that shows the victim holds the key goes to the victim itself (its in-process registry answers 409).
    crashTests(
      () => ({ kind: 'sqlite', ds }),
      () => ({ victim: pair[0], survivor: pair[1], witness: pair[0] }),
      mode,
    );
  });
});
