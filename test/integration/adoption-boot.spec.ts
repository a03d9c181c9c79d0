import type { INestApplication } from '@nestjs/common';
import { Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import {
  getIdempotencyEntities,
  getIdempotencyMigrations,
  Idempotent,
  IdempotencyModule,
  PROBLEM_TYPES,
} from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  type TestDatabase,
} from '../support/databases';
import { baseUrl } from '../support/sample-app';
import { postJson } from '../fixtures/gate/http';
import {
  AdoptionController,
  createAdoptionApp,
  OutboxWriter,
  PlainController,
  ReadmePaymentsService,
  RecordingLogger,
} from '../fixtures/adoption/adoption-fixture';

const RUN_MIGRATIONS =
  "Run the migrations: `npx typeorm migration:run -d <your data-source>` or set migrationsRun: true; the library's migrations are getIdempotencyMigrations().";

/**
 * Fail fast at boot: an app wired wrong does not start, with one message naming the fix; a
 * configuration error that is reached at request time anyway is a 500 `…:misconfigured`, not a
 * 503. Over every database.
 */
describe.each(databaseKinds())('wiring mistakes on %s', (kind) => {
  let db: TestDatabase | undefined;
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
    await db?.drop();
    db = undefined;
  });

  /** Boots the app and returns the error app.init() rejected with. */
  async function bootError(o: Parameters<typeof createAdoptionApp>[0]): Promise<Error> {
    app = await createAdoptionApp(o);
    const error = await app.init().then(
      () => undefined,
      (e: Error) => e,
    );
    if (!error) throw new Error('app.init() succeeded');
    return error;
  }

  it('no transactional plugin: init fails naming ClsPluginTransactional', async () => {
    db = await createTestDatabase(kind);
    const error = await bootError({
      dbUrl: db.url,
      transactionalPlugin: false,
      controllers: [PlainController],
    });
    expect(error.message).toMatch(
      /^IdempotencyModule: the nestjs-cls transactional plugin is not registered\. Register it in the root module: ClsModule\.forRoot\(\{ global: true, middleware: \{ mount: true \}, plugins: \[new ClsPluginTransactional\(/,
    );
  });

  it('no transactional plugin, and a service injects TransactionHost (README step 7): Nest names TransactionHost when the app is created', async () => {
    db = await createTestDatabase(kind);
    // Nest resolves the app's providers before any of the library's checks can run: the README's
    // table quotes this message and says how to read it.
    await expect(
      createAdoptionApp({
        dbUrl: db.url,
        transactionalPlugin: false,
        controllers: [PlainController],
        providers: [ReadmePaymentsService],
      }),
    ).rejects.toThrow(
      "Nest can't resolve dependencies of the ReadmePaymentsService (?, OutboxService). Please make sure that the argument TransactionHost at index [0] is available in the AdoptionAppModule module.",
    );
  });

  it('the plugin on another DataSource than the module: init fails naming dataSourceToken', async () => {
    db = await createTestDatabase(kind);
    const options = databaseOptionsFromUrl(db.url);
    @Module({
      imports: [
        TypeOrmModule.forRoot({
          ...options,
          entities: getIdempotencyEntities({ type: options.type }),
          migrations: getIdempotencyMigrations(),
          migrationsRun: true,
          logging: false,
        } as never),
        TypeOrmModule.forRoot({ ...options, name: 'other', logging: false } as never),
        ClsModule.forRoot({
          global: true,
          middleware: { mount: true },
          plugins: [
            new ClsPluginTransactional({
              adapter: new TransactionalAdapterTypeOrm({
                dataSourceToken: getDataSourceToken('other'),
              }),
            }),
          ],
        }),
        IdempotencyModule.forRoot({
          logger: false,
          cleanup: { enabled: false },
          outbox: { relayEnabled: false },
        }),
      ],
      controllers: [PlainController],
    })
    class OtherDataSourceModule {}
    app = await NestFactory.create(OtherDataSourceModule, { logger: false, abortOnError: false });
    await expect(app.init()).rejects.toThrow(
      "IdempotencyModule: the nestjs-cls transactional plugin runs its transactions on another DataSource than IdempotencyModule's (the default one). Give TransactionalAdapterTypeOrm the same one (dataSourceToken: getDataSourceToken()), or set the dataSource / transactionConnectionName options of IdempotencyModule to the pair the plugin uses.",
    );
  });

  it("the library's migrations not run: init fails naming every migration and the fix", async () => {
    db = await createTestDatabase(kind);
    const error = await bootError({ dbUrl: db.url, migrations: 'none' });
    expect(error.message).toMatch(
      /^IdempotencyModule: the database is not at the library's newest migration: table \S*idempotency_records\S* does not exist; table \S*outbox_messages\S* does not exist; table \S*inbox_messages\S* does not exist; table \S*outbox_messages_key_locks\S* does not exist; not applied: CreateIdempotencyRecords1763700000000, CreateOutboxMessages1763700000200, CreateInboxMessages1763700000300, AddOutboxDeadIndex1763700000400, LowerCaseCheckNames1763700000500, CreateOutboxKeyLocks1763800000100, AddOutboxFailureHistory1763800000200, AddOutboxRoute1763800000300\. /,
    );
    expect(error.message.endsWith(RUN_MIGRATIONS)).toBe(true);
  });

  it('an older migration: init fails naming the one not applied', async () => {
    db = await createTestDatabase(kind);
    const error = await bootError({ dbUrl: db.url, migrations: 'all-but-newest' });
    // The newest migration adds the outbox's route column: the table probe finds it missing too.
    expect(error.message).toMatch(
      /^IdempotencyModule: the database is not at the library's newest migration: table \S*outbox_messages\S* lacks columns the library needs \(.*route.*\); not applied: AddOutboxRoute1763800000300\. /,
    );
    expect(error.message.endsWith(RUN_MIGRATIONS)).toBe(true);
  });

  it('a column missing (a table from another version): init fails naming the table', async () => {
    db = await createTestDatabase(kind);
    app = await createAdoptionApp({ dbUrl: db.url });
    await app.init();
    await app.close();
    const ds = await openDataSource(db.url);
    try {
      await ds.query('ALTER TABLE inbox_messages DROP COLUMN processed_at');
    } finally {
      await ds.destroy();
    }
    const error = await bootError({ dbUrl: db.url });
    expect(error.message).toMatch(
      /^IdempotencyModule: the database is not at the library's newest migration: table \S*inbox_messages\S* lacks columns the library needs \(.*processed_at.*\)\. Run the migrations/,
    );
  });

  it('a table dropped after boot: a guarded request answers 500 misconfigured (not 503), nothing committed', async () => {
    db = await createTestDatabase(kind);
    app = await createAdoptionApp({ dbUrl: db.url });
    await app.init();
    await app.listen(0, '127.0.0.1');
    const url = await baseUrl(app);
    const ds = await openDataSource(db.url);
    try {
      await ds.query('DROP TABLE idempotency_records');
      const r = await postJson(`${url}/adoption/tx`, randomUUID(), { customer: 'dropped' });
      expect(r.status).toBe(500);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.headers.get('retry-after')).toBeNull();
      expect(r.json()).toMatchObject({ type: PROBLEM_TYPES.misconfigured, status: 500 });
      const rows = await ds.query(
        "SELECT COUNT(*) AS n FROM payments WHERE customer_id = 'dropped'",
      );
      expect(Number(rows[0].n)).toBe(0);
    } finally {
      await ds.destroy();
    }
  });

  it('OutboxService used, relay enabled, no publisher: a WARN naming outbox: { relayEnabled: false }', async () => {
    db = await createTestDatabase(kind);
    const logger = new RecordingLogger();
    app = await createAdoptionApp({
      dbUrl: db.url,
      logger,
      providers: [OutboxWriter],
      idempotency: { outbox: { relayEnabled: true } },
    });
    await app.init();
    const warnings = logger.of('warn');
    expect(warnings).toEqual([
      expect.stringMatching(
        /^IdempotencyModule: OutboxService is used \(by OutboxWriter\) but the outbox relay of this process has no publisher, so the messages stay pending\. .* set outbox: \{ relayEnabled: false \} to silence this warning\.$/,
      ),
    ]);
  });

  it('OutboxService used with relayEnabled: false, or not used: no warning', async () => {
    db = await createTestDatabase(kind);
    const logger = new RecordingLogger();
    app = await createAdoptionApp({
      dbUrl: db.url,
      logger,
      providers: [OutboxWriter],
      controllers: [AdoptionController],
    });
    await app.init();
    await app.close();
    app = await createAdoptionApp({
      dbUrl: db.url,
      logger,
      idempotency: { outbox: { relayEnabled: true } },
    });
    await app.init();
    expect(logger.of('warn')).toEqual([]);
  });
});

describe.each(databaseKinds())('IdempotencyModule not imported, on %s', (kind) => {
  let db: TestDatabase | undefined;
  afterEach(async () => {
    await db?.drop();
    db = undefined;
  });

  it('a service injects OutboxService (README step 7): Nest names OutboxService when the app is created', async () => {
    db = await createTestDatabase(kind);
    await expect(
      createAdoptionApp({
        dbUrl: db.url,
        idempotency: false,
        controllers: [PlainController],
        providers: [ReadmePaymentsService],
      }),
    ).rejects.toThrow(
      "Nest can't resolve dependencies of the ReadmePaymentsService (TransactionHost, ?). Please make sure that the argument OutboxService at index [1] is available in the AdoptionAppModule module.",
    );
  });
});

describe('@Idempotent() without IdempotencyModule', () => {
  @Controller('orphan')
  class OrphanController {
    @Post()
    @Idempotent()
    create() {
      return { ok: true };
    }
  }
  @Module({ controllers: [OrphanController] })
  class OrphanModule {}

  it('creating the app fails naming IdempotencyModule.forRoot()', async () => {
    await expect(
      NestFactory.create(OrphanModule, { logger: false, abortOnError: false }),
    ).rejects.toThrow(
      'IdempotencyModule: @Idempotent() is used but IdempotencyModule is not imported. Import IdempotencyModule.forRoot() (or forRootAsync()) once in the root module, next to TypeOrmModule.forRoot() and ClsModule.forRoot().',
    );
  });
});
