import { Module } from '@nestjs/common';
import type { DynamicModule, Provider } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import type { DataSource, EntitySchema, MixedList } from 'typeorm';
import { IdempotencyModule } from '../idempotency.module';
import type { IdempotencyModuleOptions } from '../idempotency.options';
import { getIdempotencyEntities } from '../persistence/entities';
import { LibraryClock } from '../persistence/library-clock';
import type { IdempotencyRecord } from '../persistence/entities';
import { CapturingPublisher } from './capturing.publisher';
import { IdempotencyTestKit, TEST_KIT_PARTS } from './idempotency-test-kit';
import type { TestKitParts } from './idempotency-test-kit';
import { refuseProduction } from './production.guard';
import { TestClock } from './test-clock';
import { SQLITE_DRIVER_MISSING } from './testing.messages';

/** Options of `IdempotencyTestingModule.forRoot()`: `IdempotencyModule`'s options and the app's entities. */
export interface IdempotencyTestingOptions {
  /**
   * IdempotencyModule's options, as the app passes them (gate defaults, TTLs, outbox, inbox).
   * The kit sets what a test needs: no background relay, cleanup or wake-up (drainOutbox()
   * publishes), its capturing publisher, and no logging unless `logger` is given.
   */
  idempotency?: IdempotencyModuleOptions;
  /** The app's own TypeORM entities, created in the same in-memory database (`synchronize`). */
  entities?: MixedList<string | (new (...args: any[]) => any) | EntitySchema>;
}

/**
 * Everything the library needs, for a Nest testing module, with no server: an in-memory SQLite
 * DataSource (the library's tables and the app's entities), nestjs-cls with the transactional
 * plugin (so `@Transactional()` and OutboxService join the request's transaction), and
 * IdempotencyModule with an in-process capturing publisher. Reach it with
 * `app.get(IdempotencyTestKit)`. Refuses to run with NODE_ENV=production.
 */
@Module({})
export class IdempotencyTestingModule {
  /** The library on in-memory SQLite in a Nest testing module, with a clock the test moves; refuses `NODE_ENV=production`. */
  static forRoot(options: IdempotencyTestingOptions = {}): DynamicModule {
    refuseProduction();
    try {
      require.resolve('better-sqlite3');
    } catch {
      throw new Error(SQLITE_DRIVER_MISSING);
    }
    const clock = new TestClock();
    const publisher = new CapturingPublisher();
    const idem = options.idempotency ?? {};
    const libraryEntities = getIdempotencyEntities(
      { type: 'better-sqlite3' },
      { tables: idem.tables },
    );
    const parts: Provider = {
      provide: TEST_KIT_PARTS,
      inject: [getDataSourceToken()],
      // Runs once the DataSource is initialized and before the library's first statement.
      useFactory: (dataSource: DataSource): TestKitParts => {
        refuseProduction();
        clock.install(dataSource);
        return {
          dataSource,
          clock,
          publisher,
          idempotencyEntity: libraryEntities[0] as EntitySchema<IdempotencyRecord>,
        };
      },
    };
    return {
      module: IdempotencyTestingModule,
      global: true,
      imports: [
        TypeOrmModule.forRoot({
          type: 'better-sqlite3',
          database: ':memory:',
          entities: [...libraryEntities, ...((options.entities as any[]) ?? [])],
          // The library's entities are its migrated schema (test/integration/schema-drift.spec.ts):
          // synchronize creates the same tables, and the app's beside them.
          synchronize: true,
          logging: false,
        }),
        ClsModule.forRoot({
          global: true,
          middleware: { mount: true },
          plugins: [
            new ClsPluginTransactional({
              adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
            }),
          ],
        }),
        IdempotencyModule.forRoot({
          logger: false,
          ...idem,
          cleanup: { ...idem.cleanup, enabled: false },
          outbox: {
            ...idem.outbox,
            relayEnabled: false,
            wakeOnCommit: false,
            publisher,
          },
        }),
      ],
      // Global: IdempotencyModule's replay cache finds the kit's clock through the LibraryClock port.
      providers: [parts, IdempotencyTestKit, { provide: LibraryClock, useValue: clock }],
      exports: [IdempotencyTestKit, TEST_KIT_PARTS, LibraryClock],
    };
  }
}
