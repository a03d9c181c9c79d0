import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { inProcessPublisher } from '../../lib';
import { startOutboxFixture } from '../fixtures/outbox/outbox-fixture';
import {
  CRASH_EFFECTS,
  CRASH_EFFECTS_DDL,
  CrashEffectsHandler,
} from '../fixtures/outbox/in-process-handlers';
import { eventually } from '../support/eventually';
import {
  createTestDatabase,
  databaseKinds,
  placeholder,
  type TestDatabase,
} from '../support/databases';

const FIXTURES = join(__dirname, '..', 'fixtures', 'outbox');
const LEASE_MS = 4000;

describe.each(databaseKinds())('in-process handlers and a relay killed on %s', (kind) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('a relay process SIGKILLed after the handler committed, before marking: the next relay delivers again and the handler does not run twice', async () => {
    // A writer (no relay) that also sees the effects.
    const writer = await startOutboxFixture({
      dbUrl: db.url,
      outbox: { publisher: inProcessPublisher(), relayEnabled: false },
      providers: [CrashEffectsHandler],
    });
    let second: Awaited<ReturnType<typeof startOutboxFixture>> | undefined;
    const child = spawn(
      process.execPath,
      [
        '-r',
        join(__dirname, '..', 'support', 'ts-register.js'),
        join(FIXTURES, 'in-process-relay-process.ts'),
      ],
      {
        env: { ...process.env, DB_URL: db.url, OUTBOX_LEASE_MS: String(LEASE_MS) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, s) => r(s)));
    try {
      await writer.dataSource.query(CRASH_EFFECTS_DDL);
      await eventually('the relay process is ready', () => /^READY /m.test(out), 60_000).catch(
        (e) => {
          throw new Error(`${(e as Error).message}; its output:\n${out}`);
        },
      );
      const id = randomUUID();
      await writer.txHost.withTransaction(() =>
        writer.outbox.add({ id, type: 'crash.effect', payload: {} }),
      );
      await eventually('the handler committed in the relay process', () =>
        out.includes(`COMMITTED ${id}`),
      );
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      const effects = async () =>
        writer.dataSource.query(
          `SELECT pid FROM ${CRASH_EFFECTS} WHERE message_id = ${placeholder(kind, 0)}`,
          [id],
        ) as Promise<Array<{ pid: number }>>;
      expect((await effects()).map((r) => Number(r.pid))).toEqual([child.pid]);
      expect(await writer.admin.get(id)).toMatchObject({ status: 'pending' });
      // Another relay: once the dead relay's lease lapses it delivers the message again; the
      // inbox record of the committed run makes the handler a no-op, and the message is marked.
      second = await startOutboxFixture({
        dbUrl: db.url,
        outbox: { publisher: inProcessPublisher(), pollIntervalMs: 100 },
        providers: [CrashEffectsHandler],
      });
      await eventually(
        'the message is marked sent by the second relay',
        async () => (await writer.admin.get(id))?.status === 'sent',
        LEASE_MS * 5,
      );
      expect((await effects()).map((r) => Number(r.pid))).toEqual([child.pid]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await second?.close();
      await writer.close();
    }
  }, 120_000);
});
