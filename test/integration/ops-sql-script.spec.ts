import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { FunctionPublisher, getIdempotencyMigrations, IdempotencyAdminService } from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { startOpsApp, urlOf } from '../support/ops-fixture';
import { catalogOf, runCliBin, runSchemaScript } from '../support/schema-cli';

/**
 * `nestjs-exactly-once schema sql` prints the statements of the library's TypeORM migrations,
 * guarded and recorded. Proven here on every database: the migrations on database A, the printed
 * script (twice: it is re-runnable) on database B, and the two catalogs compared; then the
 * library runs on the tables the script made. docs/sql/mssql-schema.sql is that script.
 */

const DIALECT = {
  sqlite: 'sqlite',
  postgres: 'postgres',
  mariadb: 'mysql',
  mssql: 'mssql',
} as const;

async function isBabelfish(ds: DataSource): Promise<boolean> {
  if (ds.options.type !== 'mssql') return false;
  const [row] = await ds.query('SELECT @@VERSION AS v');
  return /babelfish/i.test(String(row?.v));
}

describe('docs/sql/mssql-schema.sql', () => {
  it('is what `schema sql --dialect mssql` prints (regenerate: npm run schema:sql-docs)', async () => {
    const committed = readFileSync(
      join(__dirname, '..', '..', 'docs', 'sql', 'mssql-schema.sql'),
      'utf8',
    );
    const printed = await runCliBin(['schema', 'sql', '--dialect', 'mssql']);
    expect(printed.code).toBe(0);
    expect(committed).toBe(printed.stdout);
  });
});

describe.each(databaseKinds())('schema sql on %s', (kind) => {
  let migrated: TestDatabase;
  let scripted: TestDatabase;
  let app: INestApplication | undefined;
  const naming = {
    tables: { idempotency: 'idem_keys', outbox: 'events', inbox: 'seen' },
  };
  const tables = ['idem_keys', 'events', 'seen'];

  beforeAll(async () => {
    [migrated, scripted] = await Promise.all([createTestDatabase(kind), createTestDatabase(kind)]);
  });

  afterAll(async () => {
    await app?.close();
    await Promise.all([migrated?.drop(), scripted?.drop()]);
  });

  it('creates the same schema as the migrations (catalogs compared), twice without error, and the library runs on it', async () => {
    const a = new DataSource({
      ...(databaseOptionsFromUrl(migrated.url) as any),
      ...(kind === 'mariadb' ? { type: 'mariadb' } : {}),
      migrations: getIdempotencyMigrations(naming),
      logging: false,
    });
    await a.initialize();
    const b = await openDataSource(scripted.url);
    try {
      await a.runMigrations({ transaction: 'all' });
      const args = ['schema', 'sql', '--dialect', DIALECT[kind]];
      for (const [k, v] of Object.entries(naming.tables)) args.push('--table', `${k}=${v}`);
      // Babelfish lacks OPTIMIZE_FOR_SEQUENTIAL_KEY, as SQL Server 2016/2017 do (the migrations leave it out there).
      if (await isBabelfish(b)) args.push('--without-sequential-key');
      const printed = await runCliBin(args);
      expect(printed.code).toBe(0);
      if (kind === 'mssql') expect(printed.stdout).toMatch(/^GO$/m);
      await runSchemaScript(b, printed.stdout);
      await runSchemaScript(b, printed.stdout);

      const expected = await catalogOf(a, tables);
      expect(expected).toHaveLength(3);
      expect(await catalogOf(b, tables)).toEqual(expected);
      const recorded = async (ds: DataSource) =>
        ((await ds.query('SELECT name FROM migrations')) as Array<{ name: string }>)
          .map((r) => r.name)
          .sort();
      expect(await recorded(b)).toEqual(await recorded(a));
      expect(await recorded(b)).toHaveLength(getIdempotencyMigrations().length);
    } finally {
      await a.destroy();
      await b.destroy();
    }

    const status = await runCliBin([
      'schema',
      'status',
      '--url',
      scripted.url,
      ...Object.entries(naming.tables).flatMap(([k, v]) => ['--table', `${k}=${v}`]),
    ]);
    expect(status.stdout).toContain('is at this version');
    expect(status.code).toBe(0);

    const published: string[] = [];
    app = await startOpsApp(scripted.url, {
      ...naming,
      cleanup: { enabled: false },
      outbox: {
        publisher: new FunctionPublisher((m) => void published.push(m.id)),
        pollIntervalMs: 50,
      },
    });
    const url = await urlOf(app);
    const key = randomUUID();
    const post = () =>
      fetch(`${url}/things`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: '{"name":"script"}',
      });
    const first = await post();
    expect(first.status).toBe(201);
    const { messageId } = (await first.json()) as { messageId: string };
    expect((await post()).headers.get('idempotency-replayed')).toBe('true');
    const deadline = Date.now() + 20_000;
    while (!published.includes(messageId) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(published).toContain(messageId);
    expect(
      await app
        .get(IdempotencyAdminService)
        .inspectIdempotencyKey({ method: 'POST', route: '/things' }, key),
    ).toMatchObject({ state: 'completed' });
  });
});
