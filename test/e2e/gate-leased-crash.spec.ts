import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { DEFAULT_OPTIONS } from '../../lib/idempotency-options.resolver';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';
import { type Answer, ledgerRows, paymentCount, postJson, sleep } from '../fixtures/gate/http';

/**
 * Leased mode with the library's default lease (the sample app given no IDEMPOTENCY_LEASE_MS),
 * as real OS processes: a request whose process is killed with SIGKILL inside its handler is
 * retried successfully from another process once the short lease lapses (issue 18, item 5). That a
 * live request outliving its lease is never taken over (renewal) is shown in
 * test/integration/gate-endpoint-options.spec.ts (a 3 s handler on a 1 s lease).
 */
const serverKinds = databaseKinds().filter((k) => k !== 'sqlite');
const body = (customerId: string) => ({ amount: 4.2, currency: 'USD', customerId });
/** The retry loop's bound: three default leases. With the former 60 s default it gave up. */
const GIVE_UP_MS = 3 * DEFAULT_OPTIONS.leaseMs;

describe.each(serverKinds)('leased mode, default lease, processes on one %s database', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let victim: AppProcess;
  let survivor: AppProcess;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    // The first process runs the migrations; the second starts on the migrated database.
    victim = await spawnSampleApp({ DB_URL: db.url, IDEMPOTENCY_MODE: 'leased' });
    survivor = await spawnSampleApp({ DB_URL: db.url, IDEMPOTENCY_MODE: 'leased' });
    ds = await openDataSource(db.url);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([victim, survivor].filter(Boolean).map((a) => a.kill()));
    await ds?.destroy();
    await db?.drop();
  });

  it('the default lease is 10 s', () => {
    expect(DEFAULT_OPTIONS.leaseMs).toBe(10_000);
  });

  it('after SIGKILL mid-handler (past a lease renewal), a retry from another process gets 201 and one payment', async () => {
    const key = randomUUID();
    const c = `leased-kill-${randomUUID().slice(0, 8)}`;
    // Inside its handler for 10 s (the payment inserted, uncommitted, then X-Demo-Delay-Ms).
    const doomed = postJson(`${victim.url}/payments`, key, body(c), {
      'x-demo-delay-ms': '10000',
    }).catch((e: unknown) => ({ failed: String(e) }));
    for (let i = 0; i < 500; i++) {
      if ((await ledgerRows(ds, kind, key)).some((r) => r.state === 'started')) break;
      await sleep(20);
    }
    expect(await ledgerRows(ds, kind, key)).toEqual([
      expect.objectContaining({ state: 'started' }),
    ]);
    // Past the first renewal (a third of the lease): the lease now runs a full 10 s from it.
    await sleep(DEFAULT_OPTIONS.leaseMs / 3 + 700);
    const whileAlive = await postJson(`${survivor.url}/payments`, key, body(c));
    // The whole answer in one assertion: a failure shows its problem+json (type, detail).
    expect({ status: whileAlive.status, problem: whileAlive.json() }).toMatchObject({
      status: 409,
      problem: { type: expect.stringMatching(/in-progress/) },
    });

    await victim.kill('SIGKILL');
    const killedAt = Date.now();
    expect(await doomed).toHaveProperty('failed');
    expect(await paymentCount(ds, kind, c)).toBe(0);

    // A client honouring Retry-After (at most 1 s, the lease left), giving up after GIVE_UP_MS.
    const answers: Answer[] = [];
    while (Date.now() - killedAt < GIVE_UP_MS) {
      const a = await postJson(`${survivor.url}/payments`, key, body(c));
      answers.push(a);
      if (a.status !== 409) break;
      await sleep(Math.min(Number(a.headers.get('retry-after') ?? 1) * 1000, 250));
    }
    const tookMs = Date.now() - killedAt;
    const last = answers[answers.length - 1];
    expect(last.status).toBe(201);
    expect(last.headers.get('idempotency-replayed')).toBeNull();
    expect(answers.slice(0, -1).every((a) => a.status === 409)).toBe(true);
    expect(await paymentCount(ds, kind, c)).toBe(1);
    expect(await ledgerRows(ds, kind, key)).toEqual([
      expect.objectContaining({ state: 'completed' }),
    ]);
    const replay = await postJson(`${survivor.url}/payments`, key, body(c));
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    expect(replay.bytes.equals(last.bytes)).toBe(true);
    process.stdout.write(
      `[leased-crash] ${kind}: retry got 201 ${tookMs} ms after the SIGKILL (${answers.length - 1} × 409 before)\n`,
    );
  }, 120_000);
});
