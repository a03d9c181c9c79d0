import { DataSource, type DataSourceOptions } from 'typeorm';
import { guardPgPool } from './dialects/postgres/pg-pool.guard';
import { RENEWAL_CONNECTION_CLOSED } from './persistence.messages';
import { executorFor, type SqlExecutor } from './sql-executor';

/**
 * Leased mode: the one connection lease renewals go through, beside the app's pool, never in it.
 *
 * A leased request holds a pooled connection for its handler's whole transaction, and leased mode
 * is for slow handlers (calls to other services). With as many such requests in flight as the
 * pool has connections, a renewal taken from the same pool waits behind them until one ends;
 * their leases lapse while they are alive, and a retry on another instance takes the key over and
 * runs the handler a second time (seen: PostgreSQL and MariaDB, a pool of 2 held by two 6 s
 * handlers, 1.5 s leases: the retries got 201). Renewals therefore use a DataSource of their own
 * with the app's connection options and a pool of one connection: one more connection per
 * process, opened at the first leased request (not at boot: an app without leased endpoints
 * never opens it), kept open while idle (see renewalOptions), closed at shutdown. The renewal
 * statements are short autocommit updates of one row; a process with many leased requests in
 * flight sends them one after the other on it.
 * @internal
 */
export class LeaseRenewalConnection {
  private source: DataSource | undefined;
  private opening: Promise<DataSource> | undefined;
  private closed = false;

  constructor(
    private readonly app: () => DataSource,
    private readonly onConnectionError: (err: Error) => void,
  ) {}

  /** Starts opening the connection (once), without waiting: called before a leased handler runs. */
  warm(): void {
    this.open().catch(() => undefined);
  }

  /** An autocommit executor on the renewal connection (opened first if need be). */
  async executor(): Promise<SqlExecutor> {
    const source = await this.open();
    return executorFor(source.manager);
  }

  async close(): Promise<void> {
    this.closed = true;
    const source = this.source ?? (await this.opening?.catch(() => undefined));
    this.source = undefined;
    if (source?.isInitialized) await source.destroy();
  }

  private open(): Promise<DataSource> {
    if (this.source) return Promise.resolve(this.source);
    if (this.closed) return Promise.reject(new Error(RENEWAL_CONNECTION_CLOSED));
    this.opening ??= (async () => {
      const source = new DataSource(renewalOptions(this.app().options));
      try {
        await source.initialize();
      } catch (e) {
        // The next renewal tries again (the database may be back by then).
        this.opening = undefined;
        throw e;
      }
      if (this.closed) {
        await source.destroy();
        throw new Error(RENEWAL_CONNECTION_CLOSED);
      }
      guardPgPool(source, this.onConnectionError);
      this.source = source;
      return source;
    })();
    return this.opening;
  }
}

/**
 * The app's connection options (host, credentials, TLS, driver settings), with nothing of its
 * schema (no entities, subscribers or migrations: renewals are raw statements), no logging, and
 * a pool of one connection that is never closed for being idle.
 * Each driver reads its pool size from its own place, `extra` overriding `poolSize`.
 */
export function renewalOptions(options: DataSourceOptions): DataSourceOptions {
  const o = options as any;
  const out: any = {
    ...o,
    entities: [],
    subscribers: [],
    migrations: [],
    migrationsRun: false,
    synchronize: false,
    dropSchema: false,
    // Not the app's logger: its own start-up statements (TypeORM's version query) would show up
    // in the app's query log (and its statement counters) at some unrelated request.
    logger: undefined,
    logging: false,
    cache: false,
    poolSize: 1,
  };
  // The one connection stays open once opened, whatever the app's idle settings: a pool that
  // closes it while no renewal needs it would make the next renewal connect first, and a
  // connection refused then (the server at its connection limit) or slow to open (a loaded
  // server) is a renewal missed or late.
  switch (options.type) {
    case 'postgres':
      // node-postgres closes an idle client after idleTimeoutMillis (10 s by default); 0: never.
      out.extra = { ...o.extra, max: 1, idleTimeoutMillis: 0 };
      break;
    case 'mysql':
    case 'mariadb':
      // mysql2 keeps up to maxIdle idle connections (by default as many as the limit); an app's
      // maxIdle of 0 would close this one.
      out.extra = {
        ...o.extra,
        connectionLimit: 1,
        ...(o.extra?.maxIdle !== undefined ? { maxIdle: 1 } : {}),
      };
      break;
    case 'mssql':
      // tarn closes idle connections above `min`.
      out.pool = { ...o.pool, max: 1, min: 1 };
      break;
  }
  return out as DataSourceOptions;
}
