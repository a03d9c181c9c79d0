import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { removeLedgerStatements } from '../../bench/peers/ablation';

/**
 * `npm run bench -- peers --ablate` measures the gate without its two PostgreSQL ledger
 * statements by patching a copy of the built package. These tests run that patch on a copy of
 * this checkout's build (npm test builds first), so a change to the dialect that the patch no
 * longer fits fails here, not as a silent non-ablation in a benchmark run.
 */
const ROOT = resolve(__dirname, '../..');
const DIALECTS = join('dist', 'lib', 'persistence', 'dialects');
const FILE = join(DIALECTS, 'postgres', 'idempotency.sql.js');

describe('bench/peers ablation (the gate without its two ledger statements)', () => {
  // Inside the repository (dist/ is ignored), so that the copy's requires find node_modules; a
  // new directory per test, as Jest keeps the text of every file it has read by its path.
  const parent = join(ROOT, 'dist', `ablation-spec-${process.pid}`);
  let copy = '';
  let n = 0;

  beforeEach(() => {
    copy = join(parent, String(++n));
    mkdirSync(join(copy, 'dist', 'lib', 'persistence'), { recursive: true });
    cpSync(join(ROOT, DIALECTS), join(copy, DIALECTS), { recursive: true });
  });
  afterAll(() => rmSync(parent, { recursive: true, force: true }));

  const load = () => {
    return require(join(copy, FILE)).postgresIdempotencySql({
      idempotency: '"idem"',
      outbox: '"outbox"',
      inbox: '"inbox"',
    });
  };
  const claimParams = { scope: 'POST /payments', key: 'k-1' };
  const completedParams = {
    scope: 'POST /payments',
    key: 'k-1',
    requestHash: Buffer.alloc(32),
    status: 201,
    headers: '{}',
    body: Buffer.from('{}'),
    ttlMs: 60_000,
  };

  it('the built dialect sends both statements (the control)', async () => {
    const sent: string[] = [];
    const exec = async (sql: string) => {
      sent.push(sql.trim().split(/\s+/)[0]);
      return { rows: [{ ok: true, id: '7' }], affected: 1 };
    };
    const sql = load();
    await sql.singleWrite.claim(exec, claimParams);
    await sql.singleWrite.insertCompleted(exec, completedParams);
    expect(sent).toEqual(['SELECT', 'INSERT']);
  });

  it('the patched copy answers "free" and "written" without a statement', async () => {
    removeLedgerStatements(copy);
    const exec = jest.fn(async () => {
      throw new Error('no statement expected');
    });
    const sql = load();
    await expect(sql.singleWrite.claim(exec, claimParams)).resolves.toEqual({
      locked: false,
      row: undefined,
    });
    await expect(sql.singleWrite.insertCompleted(exec, completedParams)).resolves.toBe(true);
    expect(exec).not.toHaveBeenCalled();
  });

  it('refuses a build whose dialect has another shape, naming the statement', () => {
    const path = join(copy, FILE);
    writeFileSync(path, readFileSync(path, 'utf8').replace('exec(sql.insertCompleted,', 'run('));
    expect(() => removeLedgerStatements(copy)).toThrow(/the completed record's INSERT.*0 times/);
  });

  it('refuses a directory that is not a build of this library', () => {
    expect(() => removeLedgerStatements(join(copy, 'nothing-here'))).toThrow(/is missing/);
  });
});
