import type { DataSource } from 'typeorm';

const INSTALLED = Symbol('nestjs-exactly-once:pg-pool-guard');

/** The parts of a node-postgres pool and client the guard touches. */
interface PgClientLike {
  on(event: 'error', listener: (err: Error) => void): unknown;
}
interface PgPoolLike {
  on(event: 'connect', listener: (client: PgClientLike) => void): unknown;
  /** node-postgres' pool keeps its clients here (not a documented API: used when present). */
  _clients?: PgClientLike[];
}

/**
 * PostgreSQL (node-postgres behind TypeORM): makes sure a pooled connection that the server
 * drops (failover, restart, `pg_terminate_backend`) can never crash the process.
 *
 * node-postgres emits `error` on a client when the server ends the session while no query is
 * running; an `error` event with no listener kills a Node process. The pool listens while a
 * client is idle and TypeORM's query runner listens while it holds one, but TypeORM attaches its
 * listener in a promise continuation after the pool hands the client over. When the server's
 * `ReadyForQuery` of a brand-new connection and its `FATAL` termination arrive in the same TCP
 * segment, the parser emits the error in between, with nobody listening, and the whole app dies
 * (seen in the fault suite: connections terminated under load). The guard gives every pooled
 * client a permanent listener. It only keeps the process alive: the client is already marked
 * unusable by node-postgres, its query fails (the request answers 503, a relay pass or a
 * delivery is retried) and the pool discards it when it is released.
 * @internal
 */
export function guardPgPool(dataSource: DataSource, onError: (err: Error) => void): void {
  const ds = dataSource as unknown as Record<symbol, boolean>;
  if (dataSource.options.type !== 'postgres' || ds[INSTALLED]) return;
  ds[INSTALLED] = true;
  const driver = dataSource.driver as unknown as { master?: PgPoolLike; slaves?: PgPoolLike[] };
  for (const pool of [driver.master, ...(driver.slaves ?? [])]) {
    if (!pool) continue;
    // The clients opened before the guard (TypeORM's own start-up, the migrations), then every new one.
    for (const client of pool._clients ?? []) client.on('error', onError);
    pool.on('connect', (client) => client.on('error', onError));
  }
}
