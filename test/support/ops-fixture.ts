import { Body, Controller, INestApplication, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import type { DataSource } from 'typeorm';
import {
  getIdempotencyEntities,
  getIdempotencyMigrations,
  Idempotent,
  type AdminModuleOptions,
  IdempotencyAdminModule,
  IdempotencyModule,
  type IdempotencyModuleOptions,
  OutboxService,
  ProblemDetailsFilter,
} from '../../lib';
import { databaseOptionsFromUrl } from '../../sample-app/config/database.config';
import type { TestDatabaseKind } from './databases';

/** A guarded endpoint that adds one outbox message in the gate's transaction. */
@Controller('things')
class ThingsController {
  constructor(private readonly outbox: OutboxService) {}

  @Post()
  @Idempotent()
  async create(@Body() body: { name?: string; partitionKey?: string; delayMs?: number }) {
    if (body.delayMs) await new Promise((r) => setTimeout(r, Math.min(body.delayMs!, 10_000)));
    const [messageId] = await this.outbox.add({
      type: 'thing.created',
      partitionKey: body.partitionKey ?? 'things',
      payload: { name: body.name ?? 'x' },
    });
    return { name: body.name ?? 'x', messageId };
  }
}

/**
 * A small app for the operations suites: TypeORM on the given database with the library's
 * migrations, nestjs-cls transactions, the library with the given options (a function: through
 * `forRootAsync`), a guarded
 * `POST /things` that writes an outbox message, and the admin API under `/admin`.
 */
export async function startOpsApp(
  dbUrl: string,
  options: IdempotencyModuleOptions | (() => Promise<IdempotencyModuleOptions>),
  extra: { controllers?: Array<new (...args: any[]) => unknown>; admin?: AdminModuleOptions } = {},
): Promise<INestApplication> {
  const db = databaseOptionsFromUrl(dbUrl);
  @Module({
    imports: [
      TypeOrmModule.forRoot({
        ...db,
        entities: getIdempotencyEntities({ type: db.type }),
        migrations: getIdempotencyMigrations(),
        migrationsRun: true,
        synchronize: false,
        logging: false,
      } as any),
      ClsModule.forRoot({
        global: true,
        middleware: { mount: true },
        plugins: [
          new ClsPluginTransactional({
            adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
          }),
        ],
      }),
      typeof options === 'function'
        ? IdempotencyModule.forRootAsync({
            useFactory: async () => ({ logger: false, ...(await options()) }),
          })
        : IdempotencyModule.forRoot({ logger: false, ...options }),
      IdempotencyAdminModule.register({ path: 'admin', ...extra.admin }),
    ],
    controllers: [ThingsController, ...(extra.controllers ?? [])],
  })
  class OpsFixtureModule {}
  const app = await NestFactory.create(OpsFixtureModule, { logger: false });
  app.useGlobalFilters(new ProblemDetailsFilter());
  await app.init();
  await app.listen(0, '127.0.0.1');
  return app;
}

/** POSTs `body` as JSON to the ops app's guarded `/things` with the given Idempotency-Key. */
export function postThing(url: string, key: string, body: object): Promise<Response> {
  return fetch(`${url}/things`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
}

export async function urlOf(app: INestApplication): Promise<string> {
  return (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
}

export function dataSourceOf(app: INestApplication): DataSource {
  return app.get<DataSource>(getDataSourceToken() as any, { strict: false });
}

/** String concatenation of a literal prefix and an integer column. */
export function concatFor(kind: TestDatabaseKind['name']) {
  return (prefix: string, column: string) =>
    kind === 'mariadb' || kind === 'mssql'
      ? `CONCAT('${prefix}', ${column})`
      : `('${prefix}' || ${column})`;
}

/** A raw SQL runner for one database kind: `?` placeholders are rewritten to the dialect's. */
export function sqlFor(kind: TestDatabaseKind['name'], ds: DataSource) {
  return (sql: string, params: unknown[] = []) => {
    let i = 0;
    const text =
      kind === 'postgres'
        ? sql.replace(/\?/g, () => `$${++i}`)
        : kind === 'mssql'
          ? sql.replace(/\?/g, () => `@${i++}`)
          : sql;
    return ds.query(text, params);
  };
}

/** Time arithmetic on each database's clock (UTC), for test rows written with raw SQL. */
export function clockFor(kind: TestDatabaseKind['name']) {
  switch (kind) {
    case 'postgres':
      return (ms: number) =>
        `(statement_timestamp() + (${Math.trunc(ms)})::bigint * interval '1 millisecond')`;
    case 'mariadb':
      return (ms: number) =>
        `DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ${Math.trunc(ms) * 1000} MICROSECOND)`;
    case 'mssql':
      return (ms: number) =>
        `DATEADD(second, ${Math.trunc(ms / 1000)}, DATEADD(millisecond, ${Math.trunc(ms % 1000)}, SYSUTCDATETIME()))`;
    case 'sqlite':
      return (ms: number) =>
        `strftime('%Y-%m-%d %H:%M:%f', 'now', '${ms >= 0 ? '+' : ''}${ms / 1000} seconds')`;
  }
}

/** Like clockFor, minus `column` milliseconds (a per-row offset in set-based inserts). */
export function clockMinusFor(kind: TestDatabaseKind['name']) {
  switch (kind) {
    case 'postgres':
      return (ms: number, column: string) =>
        `(statement_timestamp() + (${Math.trunc(ms)} - ${column})::bigint * interval '1 millisecond')`;
    case 'mariadb':
      return (ms: number, column: string) =>
        `DATE_ADD(UTC_TIMESTAMP(3), INTERVAL (${Math.trunc(ms)} - ${column}) * 1000 MICROSECOND)`;
    case 'mssql':
      return (ms: number, column: string) =>
        `DATEADD(millisecond, -${column}, DATEADD(second, ${Math.trunc(ms / 1000)}, DATEADD(millisecond, ${Math.trunc(ms % 1000)}, SYSUTCDATETIME())))`;
    case 'sqlite':
      return (ms: number, column: string) =>
        `strftime('%Y-%m-%d %H:%M:%f', 'now', ((${ms} - ${column}) / 1000.0) || ' seconds')`;
  }
}

/**
 * A set-based row source of `n` integers 1..n (`n` ≤ 1,000,000) as a FROM clause with a column
 * `i`, per database: generate_series, a recursive CTE, or cross-joined digits.
 */
export function seriesFor(
  kind: TestDatabaseKind['name'],
  n: number,
): { with: string; from: string } {
  switch (kind) {
    case 'postgres':
      return { with: '', from: `generate_series(1, ${n}) AS g(i)` };
    case 'sqlite':
      return {
        with: `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ${n}) `,
        from: 'g',
      };
    case 'mariadb':
    case 'mssql': {
      const digits =
        '(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)';
      const places = Math.max(1, Math.ceil(Math.log10(n)));
      const names = Array.from({ length: places }, (_, k) => `d${k}`);
      const sum = names.map((a, k) => `${10 ** k} * ${a}.d`).join(' + ');
      const joins = names.map((a) => `${digits} ${a}`).join(' CROSS JOIN ');
      return { with: '', from: `(SELECT ${sum} + 1 AS i FROM ${joins}) AS g WHERE g.i <= ${n}` };
    }
  }
}
