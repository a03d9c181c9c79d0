import type { INestApplication, INestApplicationContext } from '@nestjs/common';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { randomUUID } from 'node:crypto';
import { getDataSourceToken } from '@nestjs/typeorm';
import { type DataSource, QueryRunnerAlreadyReleasedError } from 'typeorm';
import { InboxService, OutboxService, PROBLEM_TYPES, ProblemDetailsFilter } from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import { executorFor } from '../../lib/persistence/sql-executor';
import { EffectsWriter, InboxFixtureModule } from '../fixtures/inbox/inbox-fixture.module';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  PG_ADMIN_URL,
  type TestDatabase,
} from '../support/databases';
import { baseUrl, startSampleApp } from '../support/sample-app';
import { sleep } from './support/fault-client';
import { describeEachDatabase } from './support/fault-cluster';

/**
 * The defects the database outage scenario (outages.spec.ts) found, pinned down one at a time
 * on PostgreSQL, where a connection can be terminated at an exact moment.
 */
describeEachDatabase(
  databaseKinds().filter((k) => k === 'postgres'),
  'a lost database connection on %s',
  () => {
    let db: TestDatabase;
    let admin: DataSource;

    beforeAll(async () => {
      db = await createTestDatabase('postgres');
      admin = await openDataSource(PG_ADMIN_URL);
    });

    afterAll(async () => {
      await admin?.destroy();
      await db?.drop();
    });

    const terminate = (pid: number) => admin.query('SELECT pg_terminate_backend($1)', [pid]);

    it('a statement of a transaction whose connection was lost fails; it never runs (and commits) on another connection', async () => {
      const ds = await openDataSource(db.url);
      try {
        await ds.query('CREATE TABLE lost_tx_probe (id INT)');
        let failure: unknown;
        try {
          await ds.transaction(async (em) => {
            const pid = Number((await em.query('SELECT pg_backend_pid() AS pid'))[0].pid);
            await terminate(pid);
            // TypeORM releases the query runner when its connection reports the loss.
            for (let i = 0; i < 100 && !em.queryRunner!.isReleased; i++) await sleep(20);
            expect(em.queryRunner!.isReleased).toBe(true);
            // Before the fix, the library's executor ran this in autocommit on a fresh pooled
            // connection: an inbox record or a reservation committed without its transaction.
            await executorFor(em)('INSERT INTO lost_tx_probe (id) VALUES (1)');
          });
        } catch (e) {
          failure = e;
        }
        expect((failure as Error)?.name).toBe('QueryRunnerAlreadyReleasedError');
        expect(Number((await ds.query('SELECT COUNT(*) AS n FROM lost_tx_probe'))[0].n)).toBe(0);
      } finally {
        await ds.destroy();
      }
    });

    describe('an inbox consumer', () => {
      let app: INestApplicationContext;

      beforeAll(async () => {
        // maxAttempts 1: one counted failure would record the message as failed for good.
        app = await NestFactory.createApplicationContext(
          InboxFixtureModule.register({ dbUrl: db.url, inbox: { maxAttempts: 1 } }),
          { logger: false },
        );
        await app.init();
      });

      afterAll(async () => {
        await app?.close();
      });

      it('whose connection is lost in the handler is not counted as failed: the redelivery runs it', async () => {
        const inbox = app.get(InboxService);
        const effects = app.get(EffectsWriter);
        const txHost = TransactionHost.getInstance<TransactionalAdapterTypeOrm>();
        const id = randomUUID();
        let runs = 0;
        const handler = async () => {
          runs++;
          if (runs === 1) {
            const pid = Number((await txHost.tx.query('SELECT pg_backend_pid() AS pid'))[0].pid);
            await terminate(pid);
            for (let i = 0; i < 100 && !txHost.tx.queryRunner?.isReleased; i++) await sleep(20);
          }
          await effects.record('ledger', id);
        };
        await expect(inbox.process('ledger', id, handler)).rejects.toThrow();
        // Before the fix the loss was counted: the message was recorded as failed (attempts 1 of
        // 1) and the redelivery below was skipped and acknowledged, its effect never written.
        expect(await inbox.find('ledger', id)).toBeUndefined();
        const again = await inbox.process('ledger', id, handler);
        expect(again.status).toBe('processed');
        const ds = app.get<DataSource>(getDataSourceToken());
        const rows = await ds.query(
          'SELECT COUNT(*) AS n FROM inbox_effects WHERE message_id = $1',
          [id],
        );
        expect(Number(rows[0].n)).toBe(1);
      });
    });

    describe("an app's own query", () => {
      @Controller('probe')
      class ProbeController {
        constructor(@InjectDataSource() private readonly ds: DataSource) {}

        @Get('slow')
        async slow() {
          await this.ds.query('SELECT pg_sleep(5) AS slept');
          return { ok: true };
        }

        @Get('quick')
        async quick() {
          return (await this.ds.query('SELECT 1 AS one'))[0];
        }
      }

      let app: INestApplication;

      beforeAll(async () => {
        @Module({
          imports: [
            TypeOrmModule.forRoot({ ...databaseOptionsFromUrl(db.url), logging: false } as any),
          ],
          controllers: [ProbeController],
        })
        class ProbeModule {}
        app = await NestFactory.create(ProbeModule, { logger: false });
        app.useGlobalFilters(new ProblemDetailsFilter());
        await app.listen(0, '127.0.0.1');
      });

      afterAll(async () => {
        await app?.close();
      });

      it('that loses its connection answers 503 problem+json with Retry-After, not 500; the next request is served', async () => {
        const url = await baseUrl(app);
        const answer = fetch(`${url}/probe/slow`);
        const dbName = new URL(db.url).pathname.slice(1);
        let pid: number | undefined;
        for (let i = 0; i < 100 && pid === undefined; i++) {
          const rows = await admin.query(
            `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'SELECT pg_sleep(5)%'`,
            [dbName],
          );
          pid = rows[0] ? Number(rows[0].pid) : undefined;
          if (pid === undefined) await sleep(20);
        }
        expect(pid).toBeDefined();
        await terminate(pid!);
        const r = await answer;
        // Before: 500 "An unexpected error occurred." for a retryable failure.
        expect(r.status).toBe(503);
        expect(r.headers.get('content-type')).toContain('application/problem+json');
        expect(r.headers.get('retry-after')).toBe('1');
        const body = (await r.json()) as { status: number; type: string; detail: string };
        expect(body).toMatchObject({ status: 503, type: PROBLEM_TYPES.unavailable });
        expect(body.detail).toMatch(/database is unavailable/);
        const again = await fetch(`${url}/probe/quick`);
        expect(again.status).toBe(200);
      });
    });

    describe('in an app using the library', () => {
      let app: INestApplication;

      beforeAll(async () => {
        app = await startSampleApp(db.url, 'express', { OUTBOX_RELAY_ENABLED: 'false' });
      });

      afterAll(async () => {
        await app?.close();
      });

      it("an outbox write in a transaction whose connection was lost fails as a database failure (503), not as 'no transaction'", async () => {
        const outbox = app.get(OutboxService);
        const txHost = TransactionHost.getInstance<TransactionalAdapterTypeOrm>();
        const type = `lost-${randomUUID()}`;
        let failure: unknown;
        try {
          await txHost.withTransaction(async () => {
            const pid = Number((await txHost.tx.query('SELECT pg_backend_pid() AS pid'))[0].pid);
            await terminate(pid);
            for (let i = 0; i < 100 && !txHost.tx.queryRunner?.isReleased; i++) await sleep(20);
            // Before: OutboxTransactionRequiredError ("needs a transaction"), answered 500.
            await outbox.add({ type, payload: { n: 1 } });
          });
        } catch (e) {
          failure = e;
        }
        expect(failure).toBeInstanceOf(QueryRunnerAlreadyReleasedError);
        const ds = app.get<DataSource>(getDataSourceToken());
        const rows = await ds.query('SELECT COUNT(*) AS n FROM outbox_messages WHERE type = $1', [
          type,
        ]);
        expect(Number(rows[0].n)).toBe(0);
      });

      it('a pooled connection the server ends right after the pool handed it over cannot crash the process', async () => {
        const ds = app.get<DataSource>(getDataSourceToken());
        // What TypeORM does for a query runner, stopped at the moment it has the client and has
        // not yet attached its error listener (it does so in a later promise continuation).
        const pool = (ds.driver as any).master;
        const client = await pool.connect();
        // Without the library's guard nobody listens now, and the error below kills the process.
        expect(client.listenerCount('error')).toBeGreaterThan(0);
        const pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
        const ended = new Promise((resolve) => client.once('end', resolve));
        await terminate(pid);
        await ended;
        client.release(new Error('terminated'));
        // The pool and the app carry on with fresh connections.
        expect(Number((await ds.query('SELECT 1 AS one'))[0].one)).toBe(1);
        const r = await fetch(`${await baseUrl(app)}/payments?customerId=after-loss`);
        expect(r.status).toBe(200);
      });
    });
  },
);
