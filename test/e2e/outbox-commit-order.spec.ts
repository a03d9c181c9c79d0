import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { type OutboxFixture, startOutboxFixture } from '../fixtures/outbox/outbox-fixture';
import { eventually } from '../support/eventually';
import { RABBIT_URL, RabbitCollector } from '../fixtures/outbox/rabbit-collector';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases';

const FIXTURES = join(__dirname, '..', 'fixtures', 'outbox');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How many times a relay is SIGKILLed and replaced while the writers commit. */
const KILLS = 4;

/** A relay in its own OS process (test/fixtures/outbox/relay-process.ts), default options. */
function spawnRelay(env: Record<string, string>): {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<void>;
} {
  const child = spawn(
    process.execPath,
    ['-r', join(__dirname, '..', 'support', 'ts-register.js'), join(FIXTURES, 'relay-process.ts')],
    {
      env: { ...process.env, RABBITMQ_URL: RABBIT_URL, ...env },
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  let out = '';
  const ready = new Promise<void>((resolve) =>
    child.stdout!.on('data', (d) => {
      out += d;
      if (/^READY /m.test(out)) resolve();
    }),
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, ready, exited };
}

/** Server databases (several processes on one SQLite file are not a supported deployment). */
const kinds = databaseKinds().filter((k) => k !== 'sqlite');

/**
 * The proof of commit order per partition key (the default `outbox.ordered`): writers commit
 * concurrently on a few keys with random pauses between their add() and their COMMIT; three
 * relays in separate processes publish to RabbitMQ while one of them is killed (SIGKILL) 0.3-1 s
 * after the previous one is up, mid-batch, and replaced (four times, while the writers go on). Each key's messages must arrive in the order their
 * transactions committed, none missing. The writer side knows commit order only up to its
 * clock: each writer records when its transaction's body ended (the COMMIT step starts) and when
 * the transaction returned, and two commits of a key are ordered when one returned before the
 * other started (overlapping ones may commit either way round; their responses may even be read
 * in the other order); every such pair must be published in that order; a message may arrive again only right after itself (a relay killed
 * after publishing, before marking: at-least-once, the consumer's inbox drops the copy).
 */
describe.each(kinds)('outbox commit order per key under 3 relays and SIGKILLs on %s', (kind) => {
  let db: TestDatabase;
  let writer: OutboxFixture;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    writer = await startOutboxFixture({
      dbUrl: db.url,
      pool: 12,
      outbox: { relayEnabled: false },
    });
  });

  afterAll(async () => {
    await writer?.close();
    await db?.drop();
  });

  it('concurrent writers with random delays before commit: 0 lost, each key in commit order', async () => {
    const queue = `eo-commit-order-${randomUUID()}`;
    const collector = await new RabbitCollector(queue).start();
    const common = {
      DB_URL: db.url,
      RELAY_QUEUE: queue,
      OUTBOX_BATCH_SIZE: '10',
      OUTBOX_POLL_INTERVAL_MS: '20',
      OUTBOX_LEASE_MS: '1500',
    };
    const relays = [0, 1, 2].map(() => spawnRelay(common));
    let killing = true;
    let kills = 0;
    await Promise.all(relays.map((r) => r.ready));
    // Four SIGKILLs of a running relay (after it booted), at random moments of its batches. The
    // writers below go on committing until the fourth, so every kill lands while there is work.
    const killer = (async () => {
      while (killing && kills < KILLS) {
        await sleep(300 + Math.random() * 700);
        if (!killing) break;
        const n = Math.floor(Math.random() * relays.length);
        await relays[n].ready;
        relays[n].child.kill('SIGKILL');
        await relays[n].exited;
        kills++;
        relays[n] = spawnRelay(common);
        await relays[n].ready;
      }
    })();
    try {
      const keys = Array.from({ length: 6 }, (_, k) => `acct-${k}-${randomUUID().slice(0, 6)}`);
      const committed = new Map<string, string[]>(keys.map((k) => [k, []]));
      // Per message: when its COMMIT step started and when its transaction returned.
      const window = new Map<string, { start: number; end: number }>();
      const writers = 8;
      const perWriter = 40;
      let total = 0;
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          // At least perWriter each, and more while the killer has not killed four times (a
          // bound keeps a stuck killer from making this endless; the kill count is asserted).
          for (let i = 0; i < perWriter || (kills < KILLS && i < 50 * perWriter); i++) {
            const key = keys[Math.floor(Math.random() * keys.length)];
            const uid = `${w}-${i}`;
            await writer.txHost.withTransaction(async () => {
              await writer.outbox.add({
                type: 'acct.changed',
                partitionKey: key,
                payload: { key, uid },
              });
              await sleep(Math.random() * 60);
              window.set(uid, { start: performance.now(), end: Infinity });
            });
            window.get(uid)!.end = performance.now();
            committed.get(key)!.push(uid);
            total++;
          }
        }),
      );
      const distinct = () =>
        new Set(collector.messages.map((m) => (m.packet.data as any).uid)).size;
      await eventually('every message arrives', () => distinct() >= total, 240_000, 100);
      await eventually(
        'the outbox is drained',
        async () => (await writer.admin.counts()).pending === 0,
        60_000,
        100,
      );
      killing = false;
      await killer;
      await sleep(500);
      const arrived = new Map<string, string[]>(keys.map((k) => [k, []]));
      for (const m of collector.messages) {
        const { key, uid } = m.packet.data as { key: string; uid: string };
        arrived.get(key)!.push(uid);
      }
      let repeats = 0;
      for (const key of keys) {
        const got = arrived.get(key)!;
        const collapsed = got.filter((u, n) => n === 0 || got[n - 1] !== u);
        repeats += got.length - collapsed.length;
        // Nothing lost, nothing repeated anywhere but right after itself.
        expect([...collapsed].sort()).toEqual([...committed.get(key)!].sort());
        expect(new Set(collapsed).size).toBe(collapsed.length);
        // Nothing out of place: no message published after one whose transaction started its
        // COMMIT only after the first one's had returned.
        const outOfOrder: string[] = [];
        for (let i = 0; i < collapsed.length; i++) {
          for (let j = i + 1; j < collapsed.length; j++) {
            if (window.get(collapsed[j])!.end < window.get(collapsed[i])!.start) {
              outOfOrder.push(`${collapsed[j]} committed before ${collapsed[i]}, published after`);
            }
          }
        }
        expect(outOfOrder).toEqual([]);
      }
      expect(kills).toBe(KILLS);
      process.stdout.write(
        `[outbox-commit-order] ${kind}: ${total} messages on ${keys.length} keys, ${kills} relay SIGKILLs, ${repeats} in-place redeliveries\n`,
      );
    } finally {
      killing = false;
      await killer.catch(() => undefined);
      for (const r of relays) r.child.kill('SIGTERM');
      await Promise.all(relays.map((r) => r.exited));
      await collector.stop();
    }
  }, 300_000);
});
