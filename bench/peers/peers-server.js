'use strict';
/*
 * The peers benchmark's app: ONE Nest 11 app, one handler (insert a payment into the database —
 * PostgreSQL, MariaDB, SQLite or SQL Server — and answer 201 with it), wired per VARIANT with this
 * library (installed from its packed tarball into bench/peers/node_modules) or with a peer. Plain
 * JavaScript run from bench/peers/, so that every require resolves in bench/peers/node_modules
 * (the peers' own install), never in the library's.
 *
 * VARIANT:
 * - lib: POST /a (no idempotency, autocommit insert), POST /a-tx (the same insert in a nestjs-cls
 *   transaction, no gate), POST /payments-diy (the same transaction with a ledger written by hand:
 *   the key's record inserted before the payment, completed after it), POST /payments
 *   (@Idempotent(), transactional mode), POST /payments-leased (@Idempotent({ mode: 'leased',
 *   leaseMs: 5000 }));
 * - lib-user: the same routes in the app a user writes from the tutorial (docs/getting-started.md),
 *   every option of this library at its default but the tutorial's `principalResolver`
 *   (`IdempotencyModule.forRoot({ principalResolver })`, `withExactlyOnce()`, the relay and the
 *   cleanup running), bootstrapped as the tutorial does (`NestFactory.create(AppModule, { rawBody:
 *   true })`, Nest's default logger); PEERS_USER_OPTIONS (JSON) is merged into its forRoot,
 *   PEERS_USER_NEST_OPTIONS (JSON) into its NestFactory.create options, PEERS_USER_NEST_LEVELS=1
 *   gives Nest `logger: ['error', 'warn']` (to find which default costs);
 * - ni-redis / ni-memory: POST /payments with @node-idempotency/nestjs (Redis / in-memory storage);
 * - ei-redis: POST /payments behind the express-idempotency middleware with its Redis adapter.
 * Every handler sleeps `x-delay-ms` after its insert (the crash probe kills the process then).
 * The peers keep their idempotency records in Redis or in memory (as their users do); only the
 * payment goes to the database.
 * GET /health; GET /bench/statements: the SQL statements sent and the requests answered since the
 * last call (and resets both), and the requests in flight; POST /bench/warm-pool: opens every
 * connection of the DataSource's pool at once (Babelfish answers a new connection's first batch
 * about a second late: that belongs to no request of a warm service).
 *
 * Env: VARIANT, PEERS_DB_OPTIONS (the DataSource options as JSON: type, url or host/port/…, pool;
 * computed by the suite from a DB_URL) or PG_URL (PostgreSQL alone, as before), REDIS_URL, PORT,
 * HOST; LIB_DIR (lib-before: where that build is unpacked).
 */

/*
 * Nothing outside bench/peers is loaded, as in a user's app that installs only what its
 * package.json names. Node looks for a package in every parent folder's node_modules, so without
 * this the repository's own install would lend the app what bench/peers does not have: Nest core
 * loads @nestjs/microservices when it finds it, and this library @nestjs/swagger, both of the
 * repository's versions. Such a file is reported as not installed (MODULE_NOT_FOUND).
 */
const NodeModule = require('node:module');
const path = require('node:path');
const OWN_ROOT = __dirname + path.sep;
const resolveFilename = NodeModule._resolveFilename;
NodeModule._resolveFilename = function (request, ...rest) {
  const file = resolveFilename.call(this, request, ...rest);
  if (path.isAbsolute(file) && !file.startsWith(OWN_ROOT)) {
    const e = new Error(
      `Cannot find module '${request}' (outside bench/peers: not installed here)`,
    );
    e.code = 'MODULE_NOT_FOUND';
    throw e;
  }
  return file;
};

require('reflect-metadata');
const { createHash, randomUUID } = require('node:crypto');
const { ServerResponse } = require('node:http');
const {
  Body,
  ConflictException,
  Controller,
  Get,
  Headers,
  Inject,
  Module,
  Post,
  Req,
  Res,
} = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { TypeOrmModule, getDataSourceToken } = require('@nestjs/typeorm');
const { ClsModule } = require('nestjs-cls');
const {
  ClsPluginTransactional,
  TransactionHost,
  Transactional,
} = require('@nestjs-cls/transactional');
const { TransactionalAdapterTypeOrm } = require('@nestjs-cls/transactional-adapter-typeorm');

const VARIANT = process.env.VARIANT || 'lib';
/** `lib-before`: the same app on another build of this library, unpacked under LIB_DIR/node_modules. */
const IS_LIB =
  VARIANT === 'lib' ||
  VARIANT === 'lib-before' ||
  VARIANT === 'lib-shared' ||
  VARIANT === 'lib-user';
/**
 * `lib-user`: the app as a user writes it from the quick start, every option at its default: no
 * `logger: false`, the cleanup and the outbox relay running, Nest's default logger (every level),
 * the entities and migrations through `withExactlyOnce()`.
 */
const IS_USER_APP = VARIANT === 'lib-user';
const LIB = process.env.LIB_DIR
  ? require.resolve('nestjs-exactly-once', { paths: [process.env.LIB_DIR] })
  : 'nestjs-exactly-once';
/** The payments database: TypeORM DataSource options (no entities, no logger). */
const DB_OPTIONS = process.env.PEERS_DB_OPTIONS
  ? JSON.parse(process.env.PEERS_DB_OPTIONS)
  : { type: 'postgres', url: process.env.PG_URL };
const DB_TYPE = DB_OPTIONS.type;
/** Bind placeholder `i` (0-based) of TypeORM's query() on this database. */
const placeholder = (i) =>
  DB_TYPE === 'postgres' ? `$${i + 1}` : DB_TYPE === 'mssql' ? `@${i}` : '?';
const INSERT_PAYMENT = `INSERT INTO payments (id, customer_id, amount) VALUES (${[0, 1, 2].map(placeholder).join(', ')})`;
/**
 * The hand-written ledger of POST /payments-diy (table `diy_ledger`, created by the suite): the
 * key's record inserted 'started' before the handler's insert (a concurrent duplicate waits on
 * the primary key until the first commits, then fails), and completed with the answer after it,
 * both in the handler's transaction.
 */
const DIY_CLAIM = `INSERT INTO diy_ledger (scope, idempotency_key, request_hash, state, expires_at) VALUES (${[0, 1, 2].map(placeholder).join(', ')}, 'started', ${placeholder(3)})`;
const DIY_COMPLETE = `UPDATE diy_ledger SET state = 'completed', response_status = ${placeholder(0)}, response_body = ${placeholder(1)} WHERE scope = ${placeholder(2)} AND idempotency_key = ${placeholder(3)}`;
/** Connections of the DataSource's pool (SQLite: one connection, no pool). */
const POOL_SIZE =
  DB_TYPE === 'better-sqlite3' || DB_TYPE === 'sqlite'
    ? 0
    : Number(
        (DB_OPTIONS.pool && DB_OPTIONS.pool.max) ||
          (DB_OPTIONS.extra && (DB_OPTIONS.extra.max || DB_OPTIONS.extra.connectionLimit)) ||
          10,
      );
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** Counts every statement the app's DataSource sends (TypeORM calls logQuery for each). */
class StatementCounter {
  constructor() {
    this.counts = {};
  }
  logQuery(query) {
    const word = (/^\s*([A-Za-z]+)/.exec(query) || [, 'OTHER'])[1].toUpperCase();
    const kind = word === 'START' ? 'BEGIN' : word;
    this.counts[kind] = (this.counts[kind] || 0) + 1;
  }
  logQueryError(error, query) {
    console.error(
      `query failed: ${error && error.message ? error.message : error}: ${query.slice(0, 120)}`,
    );
  }
  logQuerySlow() {}
  logSchemaBuild() {}
  logMigration() {}
  log() {}
  take() {
    const out = this.counts;
    this.counts = {};
    return out;
  }
}
const counter = new StatementCounter();

// Decorators applied by hand (plain JavaScript): method, parameter and class decorators.
function method(Cls, name, decorators, params = []) {
  const d = Object.getOwnPropertyDescriptor(Cls.prototype, name);
  Object.defineProperty(Cls.prototype, name, Reflect.decorate(decorators, Cls.prototype, name, d));
  params.forEach((p, i) => p && p(Cls.prototype, name, i));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The one handler body: insert a payment on the ambient manager, then sleep x-delay-ms. */
async function insertPayment(txHost, body, delay) {
  const payment = {
    id: randomUUID(),
    customerId: String((body && body.customerId) || 'anon'),
    amount: Number((body && body.amount) || 1),
  };
  await txHost.tx.query(INSERT_PAYMENT, [payment.id, payment.customerId, payment.amount]);
  const ms = Number(delay || 0);
  if (ms > 0) await sleep(ms);
  return payment;
}

/**
 * A ledger written by hand in the handler's own transaction (what a team might write instead of
 * a library): the key taken by inserting its record, the payment, the record completed with the
 * answer. A duplicate of a committed or in-flight key gets 409 once the other one has committed
 * (the primary key's unique violation); it has no replay path, and only first executions are
 * measured.
 */
async function insertPaymentWithLedger(txHost, body, delay, key) {
  const tx = txHost.tx;
  const scope = 'POST /payments-diy';
  const hash = createHash('sha256')
    .update(JSON.stringify(body ?? {}))
    .digest();
  try {
    const expires = new Date(Date.now() + 24 * 3600 * 1000);
    // better-sqlite3 binds no Date: SQLite keeps the ISO text.
    const expiresAt =
      DB_TYPE === 'better-sqlite3' || DB_TYPE === 'sqlite' ? expires.toISOString() : expires;
    await tx.query(DIY_CLAIM, [scope, String(key), hash, expiresAt]);
  } catch (e) {
    if (/duplicate|unique|primary key/i.test(String(e && e.message)))
      throw new ConflictException('this idempotency key is taken');
    throw e;
  }
  const payment = await insertPayment(txHost, body, delay);
  await tx.query(DIY_COMPLETE, [201, JSON.stringify(payment), scope, String(key)]);
  return payment;
}

/** Requests of the measured routes in flight, and answered since the last `/bench/statements`. */
const traffic = { inFlight: 0, completed: 0 };
/**
 * Responses of the measured routes not answered yet. A request counts as answered when the app
 * ends its response, not when the connection closes: the load generator closes its connections
 * when a slice ends, and the requests then in flight still run to their end (their statements
 * and CPU belong to the slice that sent them). Counted in Node's own `end()`, patched once on the
 * prototype: wrapping each response's `end` in place (a property added per response) would cost
 * every variant a hidden class per request, and would be a middleware the apps measured here do
 * not have (this library's response capture takes a slower path around such a wrapper).
 */
const unanswered = new WeakSet();
const nodeEnd = ServerResponse.prototype.end;
ServerResponse.prototype.end = function (...args) {
  if (unanswered.delete(this)) {
    traffic.inFlight--;
    traffic.completed++;
  }
  return nodeEnd.apply(this, args);
};
function trackTraffic(req, res, next) {
  if (req.url.startsWith('/bench/') || req.url === '/health') return next();
  traffic.inFlight++;
  unanswered.add(res);
  next();
}

class HealthController {
  constructor(dataSource) {
    this.dataSource = dataSource;
  }
  health() {
    return { ok: true };
  }
  /** The statements and answered requests since the last call (and resets both), and the requests in flight. */
  statements() {
    const out = {
      statements: counter.take(),
      completed: traffic.completed,
      inFlight: traffic.inFlight,
    };
    traffic.completed = 0;
    return out;
  }
  /** Holds every pooled connection at once (each in a short transaction), so that all are open. */
  async warmPool() {
    await Promise.all(
      Array.from({ length: POOL_SIZE }, async () => {
        const runner = this.dataSource.createQueryRunner();
        try {
          await runner.startTransaction();
          await runner.query('SELECT 1');
          await sleep(300);
          await runner.commitTransaction();
        } finally {
          await runner.release();
        }
      }),
    );
    return { connections: POOL_SIZE };
  }
}
method(HealthController, 'health', [Get('health')]);
method(HealthController, 'statements', [Get('bench/statements')]);
method(HealthController, 'warmPool', [Post('bench/warm-pool')]);
Inject(getDataSourceToken())(HealthController, undefined, 0);
Reflect.decorate([Controller()], HealthController);

function libController() {
  const { Idempotent } = require(LIB);
  class LibController {
    constructor(txHost) {
      this.txHost = txHost;
    }
    a(body, delay) {
      return insertPayment(this.txHost, body, delay);
    }
    aTx(body, delay) {
      return insertPayment(this.txHost, body, delay);
    }
    guarded(body, delay) {
      return insertPayment(this.txHost, body, delay);
    }
    leased(body, delay) {
      return insertPayment(this.txHost, body, delay);
    }
    diy(body, delay, key) {
      return insertPaymentWithLedger(this.txHost, body, delay, key);
    }
  }
  const args = [Body(), Headers('x-delay-ms')];
  method(
    LibController,
    'diy',
    [Post('payments-diy'), Transactional()],
    [...args, Headers('idempotency-key')],
  );
  method(LibController, 'a', [Post('a')], args);
  method(LibController, 'aTx', [Post('a-tx'), Transactional()], args);
  method(LibController, 'guarded', [Post('payments'), Idempotent()], args);
  method(
    LibController,
    'leased',
    [Post('payments-leased'), Idempotent({ mode: 'leased', leaseMs: 5000 })],
    args,
  );
  Inject(TransactionHost)(LibController, undefined, 0);
  return Reflect.decorate([Controller()], LibController);
}

function nodeIdempotencyController() {
  const { Idempotent } = require('@node-idempotency/nestjs');
  class NiController {
    constructor(txHost) {
      this.txHost = txHost;
    }
    create(body, delay) {
      return insertPayment(this.txHost, body, delay);
    }
  }
  method(NiController, 'create', [Post('payments'), Idempotent()], [Body(), Headers('x-delay-ms')]);
  Inject(TransactionHost)(NiController, undefined, 0);
  return Reflect.decorate([Controller()], NiController);
}

function expressIdempotencyController() {
  const { getSharedIdempotencyService } = require('express-idempotency');
  class EiController {
    constructor(txHost) {
      this.txHost = txHost;
    }
    async create(req, res, body, delay) {
      // The middleware answered a replay (or a conflict) itself and still calls next().
      if (getSharedIdempotencyService().isHit(req)) return;
      const payment = await insertPayment(this.txHost, body, delay);
      res.status(201).json(payment);
    }
  }
  method(EiController, 'create', [Post('payments')], [Req(), Res(), Body(), Headers('x-delay-ms')]);
  Inject(TransactionHost)(EiController, undefined, 0);
  return Reflect.decorate([Controller()], EiController);
}

function appModule() {
  const imports = [
    TypeOrmModule.forRoot({
      ...DB_OPTIONS,
      // PostgreSQL: the suite finds this app's backends (and their CPU) by application_name.
      ...(DB_TYPE === 'postgres' ? { applicationName: `peers-${VARIANT}` } : {}),
      // SQL Server: the same name in its sessions (diagnostics only: the suite counts the server).
      ...(DB_TYPE === 'mssql'
        ? { options: { ...DB_OPTIONS.options, appName: `peers-${VARIANT}` } }
        : {}),
      logger: counter,
      synchronize: false,
      ...(IS_USER_APP
        ? (() => {
            const { entities, migrations } = require(LIB).withExactlyOnce({ ...DB_OPTIONS });
            return { entities, migrations, migrationsRun: true };
          })()
        : IS_LIB
          ? (() => {
              const lib = require(LIB);
              return {
                entities: lib.getIdempotencyEntities({ type: DB_TYPE }),
                migrations: lib.getIdempotencyMigrations(),
                migrationsRun: true,
              };
            })()
          : {}),
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
  ];
  let controller;
  if (VARIANT === 'lib-shared') {
    // The replay cache's shared tier on Redis (node-redis), its memory tier off: every replay is
    // one Redis GET, as on an instance that did not run the first execution. maxAgeMs as long
    // as the records (24 h), so that the entries outlive the run.
    const { IdempotencyModule, RedisReplayCacheStore } = require(LIB);
    imports.push(
      IdempotencyModule.forRootAsync({
        useFactory: async () => {
          const { createClient } = require('redis');
          const client = createClient({ url: REDIS_URL });
          await client.connect();
          return {
            logger: false,
            cleanup: { enabled: false },
            outbox: { relayEnabled: false },
            replayCache: {
              maxBytes: 0,
              maxAgeMs: 24 * 3600 * 1000,
              store: new RedisReplayCacheStore(client, { prefix: `peers:${process.pid}:` }),
            },
          };
        },
      }),
    );
    controller = libController();
  } else if (IS_USER_APP) {
    const { IdempotencyModule } = require(LIB);
    // PEERS_USER_OPTIONS (JSON): options given to the user's app, to find which default costs.
    imports.push(
      IdempotencyModule.forRoot({
        // The tutorial's: keys per caller (no auth here, so every request is the anonymous one).
        principalResolver: (req) => req.user?.id,
        ...JSON.parse(process.env.PEERS_USER_OPTIONS || '{}'),
      }),
    );
    controller = libController();
  } else if (IS_LIB) {
    const { IdempotencyModule } = require(LIB);
    imports.push(
      IdempotencyModule.forRoot({
        logger: false,
        cleanup: { enabled: false },
        outbox: { relayEnabled: false },
      }),
    );
    controller = libController();
  } else if (VARIANT === 'ni-redis' || VARIANT === 'ni-memory') {
    const { NodeIdempotencyModule } = require('@node-idempotency/nestjs');
    imports.push(
      NodeIdempotencyModule.forRootAsync({
        storage:
          VARIANT === 'ni-redis'
            ? { adapter: 'redis', options: { url: REDIS_URL } }
            : { adapter: 'memory' },
      }),
    );
    controller = nodeIdempotencyController();
  } else if (VARIANT === 'ei-redis') {
    controller = expressIdempotencyController();
  } else {
    throw new Error(`unknown VARIANT ${VARIANT}`);
  }
  class PeersAppModule {}
  return Reflect.decorate(
    [Module({ imports, controllers: [HealthController, controller] })],
    PeersAppModule,
  );
}

async function main() {
  // The user's app keeps Nest's default logger (every level); the others print warnings and errors.
  const app = await NestFactory.create(
    appModule(),
    {
      ...(IS_USER_APP && !process.env.PEERS_USER_NEST_LEVELS ? {} : { logger: ['error', 'warn'] }),
      // The tutorial's bootstrap: rawBody, so non-JSON bodies are fingerprinted by their bytes.
      ...(IS_USER_APP
        ? { rawBody: true, ...JSON.parse(process.env.PEERS_USER_NEST_OPTIONS || '{}') }
        : {}),
    },
  );
  app.use(trackTraffic);
  if (VARIANT === 'ei-redis') {
    const { idempotency } = require('express-idempotency');
    const RedisAdapter = require('express-idempotency-redis-adapter').default;
    const adapter = new RedisAdapter({ connectionConfig: { url: REDIS_URL } });
    await adapter.connect();
    app.use('/payments', idempotency({ dataAdapter: adapter }));
  }
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT || 3000), process.env.HOST || '127.0.0.1');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
