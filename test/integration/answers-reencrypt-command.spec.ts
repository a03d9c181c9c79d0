import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { answersReencryptCommand } from '../../lib/cli/commands/answers-reencrypt.command';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';
import { appSetupTimeoutMs, baseUrl } from '../support/sample-app';
import { startGateFixture } from '../fixtures/gate/gate-fixture.module';
import { postJson } from '../fixtures/gate/http';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };
const env = (...keys: Array<{ id: string; key: Buffer }>) =>
  keys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(',');

/** Runs the command with IDEMPOTENCY_ENCRYPTION_KEYS set, capturing stdout and stderr. */
async function run(keys: string | undefined, args: string[]) {
  const saved = process.env.IDEMPOTENCY_ENCRYPTION_KEYS;
  const out: string[] = [];
  const err: string[] = [];
  const so = jest.spyOn(process.stdout, 'write').mockImplementation((s) => !!out.push(String(s)));
  const se = jest.spyOn(process.stderr, 'write').mockImplementation((s) => !!err.push(String(s)));
  if (keys === undefined) delete process.env.IDEMPOTENCY_ENCRYPTION_KEYS;
  else process.env.IDEMPOTENCY_ENCRYPTION_KEYS = keys;
  try {
    const code = await answersReencryptCommand.run(args);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    so.mockRestore();
    se.mockRestore();
    if (saved === undefined) delete process.env.IDEMPOTENCY_ENCRYPTION_KEYS;
    else process.env.IDEMPOTENCY_ENCRYPTION_KEYS = saved;
  }
}

/** `answers reencrypt --url` against each database, on answers a real gate sealed under k1. */
describe.each(databaseKinds())('CLI answers reencrypt on %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  const keys: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    const app = await startGateFixture({
      dbUrl: db.url,
      platform: 'express',
      options: { encryption: { keys: [k1] } },
    });
    try {
      const url = `${await baseUrl(app)}/gate/wait`;
      for (let i = 0; i < 3; i++) {
        keys.push(randomUUID());
        const r = await postJson(url, keys[i], { customerId: `cli-${i}-${randomUUID()}` });
        expect(r.status).toBe(201);
      }
    } finally {
      await app.close();
    }
    ds = await openDataSource(db.url);
  }, appSetupTimeoutMs(kind));

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  const kids = async () =>
    Promise.all(
      keys.map(async (k) => {
        const [r] = await ds.query(
          `SELECT response_headers FROM idempotency_records WHERE idempotency_key = ${placeholder(kind, 0)}`,
          [k],
        );
        return JSON.parse(r.response_headers).kid;
      }),
    );

  it('usage and configuration errors exit 2 with the fix', async () => {
    expect(await run(undefined, ['--url', db.url])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('IDEMPOTENCY_ENCRYPTION_KEYS is not set'),
    });
    expect(await run(env(k2), [])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--url'),
    });
    expect(
      await run(`${env(k2)},k2:${k1.key.toString('base64')}`, ['--url', db.url]),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('"k2" twice'),
    });
    expect(await run(env(k2), ['--url', db.url, '--batch-size', '0'])).toMatchObject({ code: 2 });
    expect((await run(undefined, ['--help'])).stdout).toContain('answers reencrypt --url');
    expect(await run(env(k2), ['--url', db.url, '--table', 'no_such_table'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('stopped by an error'),
    });
  });

  it('without the old key: exits 1 naming it, and rewrites nothing', async () => {
    const r = await run(env(k2), ['--url', db.url]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('"k1"');
    expect(JSON.parse(r.stdout)).toMatchObject({
      rewritten: 0,
      unreadable: 3,
      missingKeyIds: ['k1'],
    });
    expect(await kids()).toEqual(['k1', 'k1', 'k1']);
  });

  it('with k2,k1: rewrites every record under k2 in batches, exit 0; a second run finds them current', async () => {
    const r = await run(env(k2, k1), ['--url', db.url, '--batch-size', '2']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ scanned: 3, rewritten: 3, done: true });
    expect(r.stderr.split('\n').filter((l) => l.startsWith('reencrypt:'))).toHaveLength(2);
    expect(await kids()).toEqual(['k2', 'k2', 'k2']);
    const again = await run(env(k2, k1), [`--url=${db.url}`]);
    expect(JSON.parse(again.stdout)).toMatchObject({ rewritten: 0, current: 3 });
  });
});
