import { DynamicModule, INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { randomUUID } from 'node:crypto';
import {
  Column,
  Entity,
  MigrationInterface,
  PrimaryColumn,
  QueryRunner,
  Table,
  VersionColumn,
} from 'typeorm';
import type { DataSource } from 'typeorm';
import {
  ConditionalWriter,
  getIdempotencyEntities,
  getIdempotencyMigrations,
  IdempotencyModule,
  parseEntityTagCondition,
  ProblemException,
} from '../../lib';
import type { Preconditions } from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  TestDatabase,
} from '../support/databases';

/** A document with a composite key and an integer @VersionColumn (on every database, SQL Server included). */
@Entity({ name: 'cw_documents' })
class Doc {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  tenant!: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  slug!: string;

  @Column({ type: 'varchar', length: 200 })
  title!: string;

  @Column({ name: 'word_count', type: 'int', default: 0 })
  words!: number;

  @VersionColumn({ name: 'revision' })
  revision!: number;
}

/** No version column at all. */
@Entity({ name: 'cw_plain' })
class Plain {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;
}

class CreateDocs1763707999000 implements MigrationInterface {
  name = 'CreateDocs1763707999000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'cw_documents',
        columns: [
          { name: 'tenant', type: 'varchar', length: '64', isPrimary: true },
          { name: 'slug', type: 'varchar', length: '64', isPrimary: true },
          { name: 'title', type: 'varchar', length: '200' },
          { name: 'word_count', type: 'int', default: 0 },
          { name: 'revision', type: 'int' },
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'cw_plain',
        columns: [{ name: 'id', type: 'varchar', length: '64', isPrimary: true }],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('cw_plain');
    await queryRunner.dropTable('cw_documents');
  }
}

@Module({})
class WriterFixtureModule {
  static register(dbUrl: string): DynamicModule {
    const db = databaseOptionsFromUrl(dbUrl);
    return {
      module: WriterFixtureModule,
      imports: [
        TypeOrmModule.forRoot({
          ...db,
          entities: [Doc, Plain, ...getIdempotencyEntities({ type: db.type })],
          migrations: [...getIdempotencyMigrations(), CreateDocs1763707999000],
          migrationsRun: true,
          synchronize: false,
          logging: false,
        } as any),
        ClsModule.forRoot({
          global: true,
          plugins: [
            new ClsPluginTransactional({
              adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
            }),
          ],
        }),
        IdempotencyModule.forRoot({
          logger: false,
          outbox: { relayEnabled: false },
          cleanup: { enabled: false },
        }),
      ],
    };
  }
}

const ifMatch = (etag: string): Preconditions => ({ ifMatch: parseEntityTagCondition([etag], 32) });
const ANY: Preconditions = { ifMatch: '*' };
const CREATE: Preconditions = { ifNoneMatch: '*' };

/** The HTTP status of a ProblemException the promise rejects with. */
async function statusOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ProblemException) return e.problem.status;
    throw e;
  }
  throw new Error('expected a ProblemException');
}

describe.each(databaseKinds())(
  'ConditionalWriter with a @VersionColumn and a composite key on %s',
  (kind) => {
    let db: TestDatabase;
    let app: INestApplicationContext;
    let writer: ConditionalWriter;
    let txHost: TransactionHost<TransactionalAdapterTypeOrm>;
    let ds: DataSource;

    beforeAll(async () => {
      db = await createTestDatabase(kind);
      app = await NestFactory.createApplicationContext(WriterFixtureModule.register(db.url), {
        logger: false,
      });
      await app.init();
      writer = app.get(ConditionalWriter);
      txHost = app.get(TransactionHost);
      ds = await openDataSource(db.url);
    });

    afterAll(async () => {
      await ds?.destroy();
      await app?.close();
      await db?.drop();
    });

    const newId = () => ({ tenant: 't1', slug: `d-${randomUUID()}` });
    const stored = async (id: { tenant: string; slug: string }) => {
      const p = (i: number) => placeholder(kind, i);
      const rows = await ds.query(
        `SELECT title, word_count, revision FROM cw_documents WHERE tenant = ${p(0)} AND slug = ${p(1)}`,
        [id.tenant, id.slug],
      );
      return rows[0]
        ? {
            title: rows[0].title,
            words: Number(rows[0].word_count),
            revision: Number(rows[0].revision),
          }
        : undefined;
    };

    it('creates at revision 1 and replaces only the version named by the ETag', async () => {
      const id = newId();
      const created = await writer.replace(Doc, id, { title: 'v1', words: 10 }, CREATE);
      expect(created).toMatchObject({
        created: true,
        etag: '"1"',
        entity: { ...id, title: 'v1', words: 10, revision: 1 },
      });
      const replaced = await writer.replace(
        Doc,
        id,
        { title: 'v2', words: 20 },
        ifMatch(created.etag),
      );
      expect(replaced).toMatchObject({
        created: false,
        etag: '"2"',
        entity: { title: 'v2', words: 20, revision: 2 },
      });
      expect(
        await statusOf(writer.replace(Doc, id, { title: 'lost', words: 0 }, ifMatch(created.etag))),
      ).toBe(412);
      expect(await statusOf(writer.replace(Doc, id, { title: 'again', words: 0 }, CREATE))).toBe(
        412,
      );
      expect(await stored(id)).toEqual({ title: 'v2', words: 20, revision: 2 });
    });

    it('without preconditions, replace creates or replaces (upsert)', async () => {
      const id = newId();
      expect(await writer.replace(Doc, id, { title: 'a', words: 1 }, {})).toMatchObject({
        created: true,
        etag: '"1"',
      });
      expect(await writer.replace(Doc, id, { title: 'b', words: 2 }, {})).toMatchObject({
        created: false,
        etag: '"2"',
      });
      expect(await stored(id)).toEqual({ title: 'b', words: 2, revision: 2 });
    });

    it('update changes only the given columns; If-Match: * on an absent row is 412; no precondition on an absent row is null', async () => {
      const id = newId();
      const { etag } = await writer.replace(Doc, id, { title: 'keep', words: 5 }, CREATE);
      const updated = await writer.update(Doc, id, { words: 6 }, ifMatch(etag));
      expect(updated).toMatchObject({ etag: '"2"', entity: { title: 'keep', words: 6 } });
      expect(await writer.update(Doc, id, { words: 7 }, ANY)).toMatchObject({ etag: '"3"' });
      expect(await statusOf(writer.update(Doc, newId(), { words: 1 }, ANY))).toBe(412);
      expect(await writer.update(Doc, newId(), { words: 1 }, {})).toBeNull();
      expect(await statusOf(writer.update(Doc, id, { words: 1 }, CREATE))).toBe(412);
      expect(await stored(id)).toEqual({ title: 'keep', words: 7, revision: 3 });
    });

    it('delete removes only the version named by the ETag', async () => {
      const id = newId();
      const first = await writer.replace(Doc, id, { title: 'x', words: 0 }, CREATE);
      const second = await writer.replace(Doc, id, { title: 'y', words: 0 }, ifMatch(first.etag));
      expect(await statusOf(writer.delete(Doc, id, ifMatch(first.etag)))).toBe(412);
      expect(await stored(id)).toBeDefined();
      expect(await writer.delete(Doc, id, ifMatch(second.etag))).toBe(true);
      expect(await stored(id)).toBeUndefined();
      expect(await writer.delete(Doc, id, {})).toBe(false);
      expect(await statusOf(writer.delete(Doc, id, ANY))).toBe(412);
    });

    it('five concurrent updates with the same ETag: exactly one succeeds, the version moves once', async () => {
      const id = newId();
      const { etag } = await writer.replace(Doc, id, { title: 'start', words: 0 }, CREATE);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 5 }, (_, i) =>
          writer.update(Doc, id, { words: i + 1 }, ifMatch(etag)),
        ),
      );
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(
        lost.every((o) => o.reason instanceof ProblemException && o.reason.problem.status === 412),
      ).toBe(true);
      const winner = (won[0] as PromiseFulfilledResult<any>).value;
      expect(await stored(id)).toEqual({ title: 'start', words: winner.entity.words, revision: 2 });
    });

    it('two concurrent creates of the same key: exactly one succeeds', async () => {
      const id = newId();
      const outcomes = await Promise.allSettled([
        writer.replace(Doc, id, { title: 'one', words: 1 }, CREATE),
        writer.replace(Doc, id, { title: 'two', words: 2 }, CREATE),
      ]);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      const lost = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected')!;
      expect((lost.reason as ProblemException).problem.status).toBe(412);
      expect((await stored(id))?.revision).toBe(1);
    });

    it('joins the ambient transaction: a rollback after the write undoes it', async () => {
      const id = newId();
      const { etag } = await writer.replace(Doc, id, { title: 'before', words: 1 }, CREATE);
      await expect(
        txHost.withTransaction(async () => {
          await writer.replace(Doc, id, { title: 'rolled back', words: 2 }, ifMatch(etag));
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await stored(id)).toEqual({ title: 'before', words: 1, revision: 1 });
      expect(
        (await writer.replace(Doc, id, { title: 'after', words: 3 }, ifMatch(etag))).etag,
      ).toBe('"2"');
    });

    it('find returns the entity with its ETag; misuse fails with a clear error', async () => {
      const id = newId();
      const { etag } = await writer.replace(Doc, id, { title: 'found', words: 4 }, CREATE);
      expect(await writer.find(Doc, id)).toMatchObject({
        etag,
        entity: { title: 'found', words: 4 },
      });
      expect(await writer.find(Doc, newId())).toBeNull();
      await expect(writer.find(Doc, 'scalar')).rejects.toThrow(/composite primary key/);
      await expect(writer.find(Doc, { tenant: 't1' })).rejects.toThrow(/"slug"/);
      await expect(writer.replace(Plain, 'p1', {}, CREATE)).rejects.toThrow(/no version column/);
      await expect(writer.update(Doc, id, {}, ifMatch(etag))).rejects.toThrow(
        /no column to change/,
      );
    });
  },
);
