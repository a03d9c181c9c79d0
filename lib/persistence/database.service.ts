import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { NO_TRANSACTION_HOST } from '../gate/idempotency.messages';
import type { Dialect } from './dialects';
import { createDialect } from './dialects';
import { afterCommit, beforeCommit, type BeforeCommitStep } from './after-commit.hook';
import { guardPgPool } from './dialects/postgres/pg-pool.guard';
import { holdCommit, installPgRoundTrips, withHeldBegin } from './dialects/postgres/round-trips';
import { SqliteSerializer } from './dialects/sqlite/sqlite.serializer';
import { type IsolationLevel, transactionIsolationOf } from './dialects/transaction-isolation';
import type { SqlExecutor } from './sql-executor';
import { executorFor } from './sql-executor';
import { IdempotencyMisconfiguredError } from './database-misconfigured';
import { LeaseRenewalConnection } from './lease-renewal.connection';
import { TRANSACTION_HOST_ELSEWHERE } from './persistence.messages';
import { checkSchemaVersion } from './schema-version.check';
import { StrayWriteDetector } from './stray-write.detector';

/** Options of a transaction of the library's own (see `DatabaseService.inOwnTransaction`). */
export interface OwnTransactionOptions {
  /** `'default'`: the database's default level instead of the dialect's. */
  isolation?: IsolationLevel | 'default';
  /** Statements run first in the transaction (e.g. `SET LOCAL …`). */
  prelude?: readonly string[];
}

/**
 * The library's handle on the app's database, and its ONE way to reach SQL: the app's TypeORM
 * DataSource (found by `getDataSourceToken(options.dataSource)`), the dialect with every
 * database-specific statement, and three kinds of executor for the features' stores:
 * - `exec()`: the ambient transaction (nestjs-cls `TransactionHost.tx`), autocommit when none;
 * - `autocommit()`: statements on their own, outside any ambient transaction;
 * - `inOwnTransaction(fn)`: a short transaction of the library's own at the dialect's isolation level.
 * `inTransaction(fn)` makes a transaction ambient (opening one, or joining the active one).
 * On SQLite it installs the in-process transaction serializer.
 * @internal
 */
@Injectable()
export class DatabaseService implements OnModuleInit, OnApplicationShutdown {
  private _dialect!: Dialect;
  private _dataSource!: DataSource;
  private _txHost: TransactionHost<TransactionalAdapterTypeOrm> | undefined;
  private _strayWrites!: StrayWriteDetector;
  private _isolation: IsolationLevel | undefined;
  /** PostgreSQL: the gate's transactions may send START TRANSACTION and COMMIT with its statements. */
  private _heldBegin = false;
  /** Leased mode: the connection lease renewals use, beside the pool (see LeaseRenewalConnection). */
  readonly leaseRenewals = new LeaseRenewalConnection(
    () => this._dataSource,
    (err) => this.onStrayConnectionError(err),
  );

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
  ) {}

  async onModuleInit(): Promise<void> {
    this._dataSource = this.moduleRef.get<DataSource>(
      getDataSourceToken(this.options.dataSource) as string,
      {
        strict: false,
      },
    );
    if (!this._dataSource.isInitialized) await this._dataSource.initialize();
    this._dialect = await createDialect(this._dataSource, {
      schema: this.options.schema,
      tables: this.options.tables,
    });
    this._isolation = transactionIsolationOf(this._dataSource);
    if (this._dialect.singleWriter) SqliteSerializer.install(this._dataSource);
    guardPgPool(this._dataSource, (err) => this.onStrayConnectionError(err));
    this._heldBegin = installPgRoundTrips(this._dataSource);
    this._strayWrites = new StrayWriteDetector(
      this._dataSource,
      this.options.logger === false
        ? undefined
        : (this.options.logger ?? new Logger('Idempotency')),
    );
    // Fail fast: a wiring mistake is one clear message at boot, not a failed request later.
    this.checkTransactionHost();
    await checkSchemaVersion(this._dataSource, this._dialect.tables, {
      schema: this.options.schema,
      tables: this.options.tables,
    });
    // The outbox's key-lock slots (ordered mode): a table created by `synchronize` is empty.
    if (!this._dialect.singleWriter) await this._dialect.outbox.fillKeyLockSlots(this.autocommit());
  }

  async onApplicationShutdown(): Promise<void> {
    await this.leaseRenewals.close();
  }

  /** The nestjs-cls transactional plugin is registered, and on this DataSource. */
  private checkTransactionHost(): void {
    const tx: EntityManager | undefined = this.txHost.tx;
    // A host whose DataSource is closed was left by an app closed earlier in this process: the
    // plugin is not registered in this one.
    if (!tx?.connection?.isInitialized) {
      throw new IdempotencyMisconfiguredError(
        NO_TRANSACTION_HOST(this.options.transactionConnectionName),
      );
    }
    if (tx.connection !== this._dataSource) {
      throw new IdempotencyMisconfiguredError(TRANSACTION_HOST_ELSEWHERE(this.options.dataSource));
    }
  }

  /** A pooled connection failed outside any query (the server ended its session): logged, never fatal. */
  private onStrayConnectionError(err: Error): void {
    if (this.options.logger === false) return;
    (this.options.logger ?? new Logger('Database')).debug?.(
      JSON.stringify({ event: 'database.connection-lost', error: err.message }),
    );
  }

  get dialect(): Dialect {
    return this._dialect;
  }

  get dataSource(): DataSource {
    return this._dataSource;
  }

  get txHost(): TransactionHost<TransactionalAdapterTypeOrm> {
    if (!this._txHost) {
      try {
        this._txHost = TransactionHost.getInstance<TransactionalAdapterTypeOrm>(
          this.options.transactionConnectionName,
        );
      } catch {
        throw new IdempotencyMisconfiguredError(
          NO_TRANSACTION_HOST(this.options.transactionConnectionName),
        );
      }
      if (!this._txHost) {
        throw new IdempotencyMisconfiguredError(
          NO_TRANSACTION_HOST(this.options.transactionConnectionName),
        );
      }
    }
    return this._txHost;
  }

  /** Catches writes outside the transaction of a guarded handler (see StrayWriteDetector). */
  get strayWrites(): StrayWriteDetector {
    return this._strayWrites;
  }

  /** The ambient transaction's manager, or the DataSource's when none is active. */
  get manager(): EntityManager {
    return this.txHost.tx;
  }

  /** An executor on the ambient transaction (or autocommit when none), or on the given manager. */
  exec(manager?: EntityManager): SqlExecutor {
    return executorFor(manager ?? this.txHost.tx);
  }

  /** An executor outside any ambient transaction: each statement commits on its own. */
  autocommit(): SqlExecutor {
    return executorFor(this._dataSource.manager);
  }

  /**
   * Runs `fn` in a short transaction of the library's own on a connection of its own (never the
   * ambient one, which it neither joins nor sees), at the dialect's isolation level (READ
   * COMMITTED where the database offers the choice) unless told otherwise, after the prelude.
   */
  inOwnTransaction<T>(
    fn: (exec: SqlExecutor) => Promise<T>,
    options: OwnTransactionOptions = {},
  ): Promise<T> {
    const ds = this._dataSource;
    const isolation =
      options.isolation === 'default' ? undefined : (options.isolation ?? this._isolation);
    const body = async (manager: EntityManager) => {
      const exec = executorFor(manager);
      for (const sql of options.prelude ?? []) await exec(sql);
      return fn(exec);
    };
    return isolation ? ds.transaction(isolation, body) : ds.transaction(body);
  }

  /**
   * Runs `fn` in a transaction made ambient for nestjs-cls (`TransactionHost.tx`): a new one when
   * none is active (the top of a request, a relay tick or a delivery), else the active one, joined
   * (nestjs-cls `Propagation.Required`) rather than a second one, which SQLite's single
   * connection could not serve.
   */
  inTransaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.txHost.withTransaction(fn);
  }

  /**
   * `inTransaction` for the gate's transaction, whose first statement is its claim and last one
   * its completed record: on PostgreSQL a new transaction's START TRANSACTION goes with the
   * first, and its COMMIT with the last (three round trips instead of five; see
   * dialects/postgres/round-trips.ts).
   */
  inGateTransaction<T>(fn: () => Promise<T>): Promise<T> {
    if (!this._heldBegin || this.txHost.isTransactionActive()) return this.inTransaction(fn);
    return withHeldBegin(this._dataSource, () => this.txHost.withTransaction(fn));
  }

  /** Runs `fn` outside any transaction (autocommit statements). */
  withoutTransaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.txHost.withoutTransaction(fn);
  }

  /**
   * Runs `step` (with `item` and the step's other items of this transaction) right before the
   * outermost COMMIT of the transaction of `runner`, inside it (see after-commit.hook.ts). On
   * PostgreSQL a gate's transaction then sends its COMMIT on its own instead of with the
   * completed record (round-trips.ts), so that the step runs first.
   */
  beforeCommit<T>(runner: QueryRunner, step: BeforeCommitStep<T>, item: T): void {
    holdCommit(runner);
    beforeCommit(runner, step, item);
  }

  /**
   * Calls `fn` once the ambient transaction has committed (never when it rolls back), or at once
   * when no transaction is active (what ran before has committed on its own).
   */
  afterCommit(fn: () => void): void {
    const runner = this.txHost.tx.queryRunner;
    if (runner?.isTransactionActive) afterCommit(runner, fn);
    else fn();
  }
}
