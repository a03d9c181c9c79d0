import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { runCliBin } from '../support/schema-cli';

/**
 * The `nestjs-exactly-once` executable (dist/lib/cli/main.js, package.json `bin`), spawned as a
 * user runs it: `schema status` fails on an empty database and names what is missing, `schema
 * migrate` applies the library's migrations, `status` then passes; a second migrate applies none.
 */
describe.each(databaseKinds())('schema status / migrate on %s', (kind) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('status fails on an empty database, migrate applies the schema, status then passes', async () => {
    if (kind === 'sqlite') {
      // An empty database file (status refuses a file that does not exist: a typo'd path).
      const { writeFileSync } = await import('node:fs');
      writeFileSync(db.url.slice('sqlite:'.length), '');
    }
    const before = await runCliBin(['schema', 'status', '--url', db.url]);
    expect(before.stdout).toContain('NOT at this version');
    expect(before.stdout).toMatch(/outbox_messages\W* does not exist/);
    expect(before.stdout).toContain('migration not applied: CreateOutboxMessages1763700000200');
    expect(before.code).toBe(1);

    const migrate = await runCliBin(['schema', 'migrate', '--url', db.url]);
    expect(migrate.stderr).toBe('');
    expect(migrate.stdout).toContain('CreateIdempotencyRecords1763700000000');
    expect(migrate.code).toBe(0);

    const after = await runCliBin(['schema', 'status', '--url', db.url]);
    expect(after.stdout).toContain('is at this version');
    expect(after.code).toBe(0);

    const again = await runCliBin(['schema', 'migrate', '--url', db.url]);
    expect(again.stdout).toContain('nothing to apply');
    expect(again.code).toBe(0);

    // An index dropped behind the migrations' back (they still record it): status names it.
    const index =
      kind === 'mariadb' ? 'ix_outbox_messages_status_sent_at' : 'ix_outbox_messages_sent_at';
    const ds = await openDataSource(db.url);
    try {
      await ds.query(
        kind === 'mariadb' || kind === 'mssql'
          ? `DROP INDEX ${index} ON outbox_messages`
          : `DROP INDEX ${index}`,
      );
    } finally {
      await ds.destroy();
    }
    const dropped = await runCliBin(['schema', 'status', '--url', db.url]);
    expect(dropped.stdout).toMatch(new RegExp(`lacks the index ${index}`, 'i'));
    expect(dropped.code).toBe(1);
  });
});

describe('nestjs-exactly-once usage', () => {
  it('prints CREATE TABLE statements in GO batches for SQL Server', async () => {
    const r = await runCliBin(['schema', 'sql', '--dialect', 'mssql']);
    expect(r.code).toBe(0);
    const batches = r.stdout.split(/^GO$/m);
    expect(batches.length).toBeGreaterThan(4);
    expect(batches.filter((b) => /CREATE TABLE \[outbox_messages\]/.test(b))).toHaveLength(1);
    expect(r.stdout).toMatch(/IF NOT EXISTS \(SELECT 1 FROM \[migrations\] WHERE \[name\] = N'/);
  });

  it('--help lists every command, exit 0', async () => {
    const r = await runCliBin(['--help']);
    expect(r.code).toBe(0);
    for (const c of ['schema sql', 'schema status', 'schema migrate']) {
      expect(r.stdout).toContain(c);
    }
    const sub = await runCliBin(['schema', 'sql', '--help']);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toContain('--dialect');
  });

  it.each([
    [['schema', 'sql', '--dialect', 'oracle'], /unknown database "oracle"/],
    [['schema', 'sql'], /--dialect is required/],
    [['schema', 'sql', '--dialect', 'mssql', '--schema', 'a;b'], /not a plain identifier/],
    [['schema', 'status', '--url', 'oracle://x@y/z'], /unsupported database URL/],
    [['schema', 'status', '--url', 'not a url'], /unsupported database URL/],
    [['schema', 'status'], /--url is required/],
    [['schema', 'status', '--url', 'sqlite:/nonexistent/dir/x.sqlite'], /does not exist/],
    [['schema', 'drop'], /unknown command "schema drop"/],
    [['schema', 'sql', '--dialect', 'mssql', '--bogus'], /Unknown option '--bogus'/],
  ])('%j: a clear error, exit 2', async (args, message) => {
    const r = await runCliBin(args);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
    expect(r.code).toBe(2);
  });

  it('a database that cannot be reached: exit 2, the password not echoed', async () => {
    const r = await runCliBin([
      'schema',
      'status',
      '--url',
      'postgres://someone:s3cret@127.0.0.1:1/nowhere',
    ]);
    expect(r.stderr).toContain('cannot connect to postgres://someone:***@127.0.0.1:1/nowhere');
    expect(r.stderr).not.toContain('s3cret');
    expect(r.code).toBe(2);
  });
});
