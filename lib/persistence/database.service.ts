import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { NO_TRANSACTION_HOST } from '../http/idempotency.messages';
import type { Dialect } from './dialects';
import { createDialect } from './dialects';
import type { SqlExecutor } from './sql-executor';
import { executorFor } from './sql-executor';
import { SqliteSerializer } from './sqlite-serializer';
import { guardPgPool } from './pg-pool.guard';
import { IdempotencyMisconfiguredError } from './database-misconfigured';
import { TRANSACTION_HOST_ELSEWHERE } from './persistence.messages';
import { checkSchemaVersion } from './schema-version.check';
import { StrayWriteDetector } from './stray-write.detector';

/**
 * The library's handle on the app's database: the app's TypeORM DataSource (found by
 * `getDataSourceToken(options.dataSource)`), the dialect with every database-specific
 * statement, and the nestjs-cls TransactionHost through which all writes join the ambient
 * transaction. On SQLite it installs the in-process transaction serializer.
 * @internal
 */
@Injectable()
export class DatabaseService implements OnModuleInit {
  private _dialect!: Dialect;
  private _dataSource!: DataSource;
  private _txHost: TransactionHost<TransactionalAdapterTypeOrm> | undefined;
  private _strayWrites!: StrayWriteDetector;

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
    if (this._dialect.singleWriter) SqliteSerializer.install(this._dataSource);
    guardPgPool(this._dataSource, (err) => this.onStrayConnectionError(err));
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
  }

  /** The nestjs-cls transactional plugin is registered, and on this DataSource. */
  private checkTransactionHost(): void {
    const tx: EntityManager | undefined = this.txHost.tx;
    // A host whose DataSource is closed was left by an app closed earlier in this process: the
    // plugin is not registered in this one.
    if (!tx?.connection?.isInitialized)
      throw new IdempotencyMisconfiguredError(
        NO_TRANSACTION_HOST(this.options.transactionConnectionName),
      );
    if (tx.connection !== this._dataSource)
      throw new IdempotencyMisconfiguredError(TRANSACTION_HOST_ELSEWHERE(this.options.dataSource));
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
      if (!this._txHost)
        throw new IdempotencyMisconfiguredError(
          NO_TRANSACTION_HOST(this.options.transactionConnectionName),
        );
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

  /**
   * Runs `fn` in a transaction made ambient for nestjs-cls (`TransactionHost.tx`). Callers run at
   * the top of a request, a relay tick or a delivery, where none is active, so this opens a new
   * one; inside an already active transaction it joins it (nestjs-cls `Propagation.Required`)
   * rather than opening a second one, which SQLite's single connection could not serve.
   */
  inNewTransaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.txHost.withTransaction(fn);
  }

  /** Runs `fn` outside any transaction (autocommit statements). */
  withoutTransaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.txHost.withoutTransaction(fn);
  }
}
