import type { INestApplication } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { FunctionPublisher, IdempotencyAdminService } from '../../lib';
import { createMssqlDialect } from '../../lib/persistence/dialects/mssql';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { createTestDatabase, MSSQL_URL, type TestDatabase } from '../support/databases';
import { startOpsApp, urlOf } from '../support/ops-fixture';

const SCRIPT = readFileSync(join(__dirname, '..', '..', 'docs', 'sql', 'mssql-schema.sql'), 'utf8');

interface Vars {
  Schema: string;
  IdempotencyTable: string;
  OutboxTable: string;
  InboxTable: string;
}

/** What sqlcmd does with the script: `:setvar` defaults overridden by `-v`, `$(var)` substitution, GO batches. */
function sqlcmdBatches(
  script: string,
  overrides: Partial<Vars> = {},
): { vars: Vars; batches: string[] } {
  const vars: Record<string, string> = {};
  const body: string[] = [];
  for (const line of script.split(/\r?\n/)) {
    const setvar = /^:setvar\s+(\w+)\s+(\S+)\s*$/i.exec(line);
    if (setvar) vars[setvar[1]] = setvar[2];
    else if (/^:/.test(line))
      continue; // :on error exit
    else body.push(line);
  }
  Object.assign(vars, overrides);
  const text = body.join('\n').replace(/\$\((\w+)\)/g, (_, name: string) => {
    if (!(name in vars)) throw new Error(`undefined scripting variable ${name}`);
    return vars[name];
  });
  const batches = text
    .split(/^\s*GO\s*$/im)
    .map((b) => b.trim())
    .filter(
      (b) =>
        b
          .replace(/\/\*[\s\S]*?\*\//g, '')
          .replace(/--.*$/gm, '')
          .trim().length > 0,
    );
  return { vars: vars as unknown as Vars, batches };
}

/** CREATE TABLE / CREATE INDEX statements of a T-SQL text, comments removed, whitespace collapsed. */
function createStatements(sql: string): string[] {
  const clean = sql.replace(/\/\*[\s\S]*?\*\//g, '').replace(/--.*$/gm, '');
  const out: string[] = [];
  const re = /CREATE\s+(?:TABLE|(?:UNIQUE\s+)?(?:NON)?CLUSTERED\s+INDEX)\b/gi;
  const starts: number[] = [];
  for (let m = re.exec(clean); m; m = re.exec(clean)) starts.push(m.index);
  for (const start of starts) {
    // A CREATE TABLE ends at its closing parenthesis; a CREATE INDEX at the end of its line.
    if (/^CREATE\s+TABLE/i.test(clean.slice(start))) {
      let depth = 0;
      let i = clean.indexOf('(', start);
      for (; i < clean.length; i++) {
        if (clean[i] === '(') depth++;
        else if (clean[i] === ')' && --depth === 0) break;
      }
      out.push(clean.slice(start, i + 1));
    } else {
      out.push(
        clean.slice(start, clean.indexOf('\n', start) < 0 ? undefined : clean.indexOf('\n', start)),
      );
    }
  }
  return out.map((s) =>
    s.replace(/;\s*$/, '').replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')').trim(),
  );
}

function migrationStatements(vars: Vars, sequentialKey: boolean): string[] {
  const dialect = createMssqlDialect({
    schema: vars.Schema,
    tables: {
      idempotency: vars.IdempotencyTable,
      outbox: vars.OutboxTable,
      inbox: vars.InboxTable,
    },
  });
  const f = { sequentialKeyOption: sequentialKey };
  return [
    dialect.schema.idempotency(f),
    dialect.schema.outbox(f),
    dialect.schema.outboxDeadIndex(f),
    dialect.schema.inbox(f),
  ].flatMap((d) => createStatements(d.up.join('\n')));
}

describe('docs/sql/mssql-schema.sql', () => {
  it.each<[string, Partial<Vars>]>([
    ['default names', {}],
    [
      'custom schema and table names',
      {
        Schema: 'payments',
        IdempotencyTable: 'idem_keys',
        OutboxTable: 'events',
        InboxTable: 'seen',
      },
    ],
  ])(
    'creates exactly the objects of the migrations (SQL Server 2019+) with %s',
    (_label, overrides) => {
      const { vars, batches } = sqlcmdBatches(SCRIPT, overrides);
      const script = createStatements(batches.join('\n'));
      const migrations = migrationStatements(vars, true);
      expect(migrations.length).toBeGreaterThanOrEqual(10);
      expect([...script].sort()).toEqual([...migrations].sort());
    },
  );

  it('has the properties the issue asks for', () => {
    expect(SCRIPT).toMatch(
      /PRIMARY KEY CLUSTERED \(seq\) WITH \(OPTIMIZE_FOR_SEQUENTIAL_KEY = ON\)/,
    );
    expect(SCRIPT).toMatch(/WHERE status = 'pending'/);
    expect(SCRIPT).toMatch(/DATETIME2\(3\)/);
    expect(SCRIPT).toMatch(/VARBINARY\(32\)/);
    expect(SCRIPT).toMatch(/COLLATE Latin1_General_100_BIN2/);
    expect(SCRIPT).toMatch(/:setvar Schema dbo/);
  });
});

if (MSSQL_URL) {
  describe('docs/sql/mssql-schema.sql on the SQL Server of MSSQL_URL', () => {
    let db: TestDatabase;
    let app: INestApplication | undefined;
    const vars: Partial<Vars> = {
      Schema: 'ops_script',
      IdempotencyTable: 'idem_keys',
      OutboxTable: 'events',
      InboxTable: 'seen',
    };

    beforeAll(async () => {
      db = await createTestDatabase('mssql');
    });

    afterAll(async () => {
      await app?.close();
      await db?.drop();
    });

    it('runs (twice: it is re-runnable) and the library works on the tables it creates', async () => {
      const ds = new DataSource({ ...(databaseOptionsFromUrl(db.url) as any), logging: false });
      await ds.initialize();
      try {
        const version = String((await ds.query('SELECT @@VERSION AS v'))[0].v);
        const major = Number(
          (await ds.query(`SELECT CAST(SERVERPROPERTY('ProductMajorVersion') AS INT) AS m`))[0].m,
        );
        // Babelfish and SQL Server 2016/2017 do not know OPTIMIZE_FOR_SEQUENTIAL_KEY: the script says to delete it there.
        const keepSequentialKey = !/babelfish/i.test(version) && major >= 15;
        const { batches } = sqlcmdBatches(SCRIPT, vars);
        for (let run = 0; run < 2; run++) {
          for (const batch of batches) {
            await ds.query(
              keepSequentialKey
                ? batch
                : batch.replace(/ WITH \(OPTIMIZE_FOR_SEQUENTIAL_KEY = ON\)/g, ''),
            );
          }
        }
      } finally {
        await ds.destroy();
      }

      const published: string[] = [];
      app = await startOpsApp(db.url, {
        schema: vars.Schema,
        tables: {
          idempotency: vars.IdempotencyTable,
          outbox: vars.OutboxTable,
          inbox: vars.InboxTable,
        },
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
      while (!published.includes(messageId) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(published).toContain(messageId);
      const admin = app.get(IdempotencyAdminService);
      expect(
        await admin.inspectIdempotencyKey({ method: 'POST', route: '/things' }, key),
      ).toMatchObject({ state: 'completed' });

      const check = new DataSource({ ...(databaseOptionsFromUrl(db.url) as any), logging: false });
      await check.initialize();
      try {
        const rows = await check.query(
          `SELECT COUNT(*) AS n FROM [ops_script].[events] WHERE id = @0`,
          [messageId],
        );
        expect(Number(rows[0].n)).toBe(1);
      } finally {
        await check.destroy();
      }
    });
  });
}
