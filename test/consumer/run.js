#!/usr/bin/env node
/**
 * The consumer test (.ci/consumer-test.sh): the library as a user gets it, in the app the README
 * shows. Packs the staged package (`npm run package`), generates a new app with the Nest CLI from
 * the registry (`nest new`, Nest 11), runs the README's `consumer:install` commands with the
 * tarball in place of `nestjs-exactly-once`, replaces the generated src/ with the README's
 * `consumer:src/…` code blocks (nothing else: no template), then per database (PostgreSQL,
 * SQLite): runs the README's `consumer:migrate` lines (build, the library's migrations, the
 * user's own migration generated with `typeorm migration:generate`, run), starts the app and
 * checks: a replay, a 422 for another payload under the same key, each payment's outbox event
 * published to RabbitMQ and consumed once through the inbox, duplicate deliveries skipped, a
 * clean SIGTERM shutdown, and 0 messages left in the queue once the consumer is gone (every
 * delivery was acknowledged: an unacknowledged one returns to the queue when its channel closes).
 * Ends with `consumer test: PASS (…)` or exits non-zero. CONSUMER_KEEP=1 keeps the generated
 * app; CONSUMER_APP=<its path> reuses it (only the library is installed again), for development.
 */
const { execSync, spawn } = require('node:child_process');
const { randomBytes, randomUUID } = require('node:crypto');
const {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');
const amqp = require('amqplib');
const { Client } = require('pg');
const Database = require('better-sqlite3');
const { appFiles, commands, installCommands, README } = require('./readme-snippets');

const ROOT = join(__dirname, '..', '..');
const PG_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const RABBIT_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const NEST_CLI = process.env.CONSUMER_NEST_CLI ?? '@nestjs/cli@11';
const DATABASES = (process.env.CONSUMER_DATABASES ?? 'postgres,sqlite').split(',');

const log = (line) => process.stdout.write(`consumer: ${line}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const run = (cmd, cwd, env = {}) =>
  execSync(cmd, { cwd, stdio: 'inherit', env: { ...process.env, ...env } });

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

async function eventually(what, fn, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** The generated app with the tarball and the README's install commands. */
function prepareApp(work) {
  log('packing the library (npm run package, npm pack ./dist/package)');
  run('npm run package --silent', ROOT);
  const tarball = execSync(
    `npm pack ${join(ROOT, 'dist', 'package')} --pack-destination ${work} --silent`,
    {
      encoding: 'utf8',
    },
  )
    .trim()
    .split('\n')
    .pop();
  const tgz = join(work, tarball);

  if (process.env.CONSUMER_APP) {
    // Development shortcut: an app kept by an earlier run (CONSUMER_KEEP=1) gets the new tarball only.
    log(`reusing ${process.env.CONSUMER_APP}: npm install <tarball>`);
    run(`npm install ${tgz} --no-audit --no-fund`, process.env.CONSUMER_APP);
    return process.env.CONSUMER_APP;
  }

  log(`generating an app with ${NEST_CLI} (from the registry)`);
  run(`npx -y ${NEST_CLI} new app --skip-git --package-manager npm`, work);
  const app = join(work, 'app');

  const commands = installCommands(readFileSync(README, 'utf8'));
  check(commands.length > 0, 'the README has consumer:install commands');
  offerLocalPrebuild(work);
  for (const command of commands) {
    const withTarball = command.replace(/(^|\s)nestjs-exactly-once(?=\s|$)/, `$1${tgz}`);
    log(`$ ${withTarball}`);
    run(withTarball, app);
  }
  // The README's `npm pkg set` lines land in the app's package.json, and better-sqlite3's native
  // build ran (its install script, allowed there).
  const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
  check(
    manifest.allowScripts?.['better-sqlite3'] === true,
    "the app's package.json allows better-sqlite3's install script",
  );
  check(
    existsSync(join(app, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node')),
    "better-sqlite3's native build is in the app",
  );
  log("better-sqlite3's install script allowed in package.json, its native build present: ok");

  return app;
}

/**
 * better-sqlite3's install script (prebuild-install) downloads a prebuilt binary from GitHub's
 * releases, as it does on a user's machine; where GitHub is out of reach (the CI machines reach
 * the npm registry only) it compiles SQLite instead: about 2 minutes of one core, the longest step
 * of this test. The repository's own install of better-sqlite3 holds that binary, built for this
 * Node. Packed as prebuild-install names and unpacks a prebuild, it stands in for the download
 * (prebuild-install's `local-prebuilds` setting, in a `.prebuild-installrc` file in the app's
 * parent folder, where its configuration loader looks from the package's folder upwards; not an
 * environment variable: npm warns about an `npm_config_` setting it does not know, and Debian's
 * sh drops a `prebuild-install_…` name). The app's own files are untouched. The app still runs the
 * install script the README allows, which unpacks it, and the check after the install commands
 * still needs the binary in the app; a better-sqlite3 of another version than the repository's
 * finds no such file and compiles, as before.
 */
function offerLocalPrebuild(work) {
  const pkgDir = join(ROOT, 'node_modules', 'better-sqlite3');
  const binary = join(pkgDir, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(binary)) return;
  const { version } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const dir = join(work, 'prebuilds');
  mkdirSync(dir, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  run(`tar -czf ${join(dir, name)} -C ${pkgDir} build/Release/better_sqlite3.node`, ROOT);
  writeFileSync(join(work, '.prebuild-installrc'), `local-prebuilds=${dir}\n`);
  log(`better-sqlite3 ${version}: this repository's build offered to the app as a local prebuild`);
}

/** The README's app for one database: its code blocks as src/, then its `consumer:migrate` lines. */
function build(app, kind, env) {
  const markdown = readFileSync(README, 'utf8');
  rmSync(join(app, 'src'), { recursive: true, force: true });
  rmSync(join(app, 'dist'), { recursive: true, force: true });
  for (const [file, code] of Object.entries(appFiles(markdown, kind))) {
    mkdirSync(dirname(join(app, file)), { recursive: true });
    writeFileSync(join(app, file), code);
  }
  const lines = commands(markdown, 'migrate');
  check(
    lines.some((l) => l.includes('migration:generate')),
    'the README generates a migration',
  );
  for (const line of lines) {
    log(`${kind}: $ ${line}`);
    run(line, app, env);
  }
  const generated = readdirSync(join(app, 'src', 'migrations'));
  check(generated.length === 1, `one generated migration (got ${generated.join(', ')})`);
  const migration = readFileSync(join(app, 'src', 'migrations', generated[0]), 'utf8');
  check(
    /ledger_entries/.test(migration) && /payments/.test(migration),
    'it creates the app tables',
  );
  check(
    !/idempotency_records|outbox_messages|inbox_messages/.test(migration),
    'and none of the library',
  );
}

async function startApp(app, env) {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: app,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  try {
    await eventually('the app to listen', async () => {
      if (child.exitCode !== null) throw new Error('exited');
      return (await fetch(`${url}/payments/${randomUUID()}`)).status === 404;
    });
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${e.message}; app output:\n${out}`);
  }
  return { url, child, output: () => out };
}

/** "Wire it wrong", first row: DATABASE_URL unset fails at once, naming it (no ~30 s of retries). */
async function withoutDatabaseUrl(app, env) {
  const started = Date.now();
  const { DATABASE_URL: _unset, ...rest } = { ...process.env, ...env };
  const child = spawn(process.execPath, ['dist/main.js'], { cwd: app, env: rest, stdio: 'pipe' });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await Promise.race([
    new Promise((r) => child.once('exit', (c) => r(c))),
    sleep(20_000).then(() => 'timeout'),
  ]);
  if (code === 'timeout') child.kill('SIGKILL');
  check(
    code !== 0 && code !== 'timeout' && out.includes('(e.g. DATABASE_URL) set?'),
    `without DATABASE_URL the app stops naming it (exit ${code}); output:\n${out}`,
  );
  log(`postgres: DATABASE_URL unset stops the app in ${Date.now() - started} ms, naming it ok`);
}

/** A query on the app's database (a fresh connection each time). */
function databaseReader(kind, env) {
  if (kind === 'postgres')
    return async (sql, params) => {
      const c = new Client({ connectionString: env.DATABASE_URL });
      await c.connect();
      try {
        return (await c.query(sql, params)).rows;
      } finally {
        await c.end();
      }
    };
  return async (sql, params) => {
    const db = new Database(env.DATABASE_FILE, { readonly: true, timeout: 5000 });
    try {
      return db.prepare(sql).all(...params);
    } finally {
      db.close();
    }
  };
}

/** One database: the README's app and migrations, then the feature end to end. */
async function scenario(app, kind) {
  const suffix = randomBytes(4).toString('hex');
  const queue = `consumer-${kind}-${suffix}`;
  const env = { EVENTS_QUEUE: queue, RABBITMQ_URL: RABBIT_URL };
  let admin;
  let dbName;
  if (kind === 'postgres') {
    admin = new Client({ connectionString: PG_URL });
    await admin.connect();
    dbName = `eo_consumer_${suffix}`;
    await admin.query(`CREATE DATABASE ${dbName}`);
    const u = new URL(PG_URL);
    u.pathname = `/${dbName}`;
    env.DATABASE_URL = u.toString();
  } else {
    env.DATABASE_FILE = join(app, `consumer-${suffix}.sqlite`);
  }
  const query = databaseReader(kind, env);
  const p1 = kind === 'postgres' ? '$1' : '?';
  const ledgerOf = async (paymentId) =>
    query(`SELECT id FROM ledger_entries WHERE payment_id = ${p1}`, [paymentId]);
  const outboxOf = async (paymentId) =>
    query(`SELECT id, status FROM outbox_messages WHERE partition_key = ${p1}`, [paymentId]);

  let conn;
  let channel;
  let p;
  try {
    build(app, kind, env);
    if (kind === 'postgres') await withoutDatabaseUrl(app, env);
    // Connected after the build: execSync blocks the event loop, and a connection that misses
    // its heartbeats meanwhile is closed by the broker.
    conn = await amqp.connect(RABBIT_URL);
    conn.on('error', () => undefined);
    channel = await conn.createChannel();
    p = await startApp(app, env);

    const post = (key, body) =>
      fetch(`${p.url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
      });
    const key = randomUUID();
    const first = await post(key, { customerId: 'cus_1', amount: 4250 });
    const firstBody = await first.text();
    check(first.status === 201, `first POST answers 201 (got ${first.status}: ${firstBody})`);
    check(!first.headers.has('idempotency-replayed'), 'the first answer is no replay');
    const replay = await post(key, { customerId: 'cus_1', amount: 4250 });
    const replayBody = await replay.text();
    check(replay.status === 201, `the retry answers 201 (got ${replay.status})`);
    check(replayBody === firstBody, 'the retry gets the same body byte for byte');
    check(
      replay.headers.get('idempotency-replayed') === 'true',
      'the retry says Idempotency-Replayed: true',
    );
    log(`${kind}: replay ok`);

    const reused = await post(key, { customerId: 'cus_1', amount: 4300 });
    const problem = await reused.json();
    check(
      reused.status === 422,
      `another payload under the same key answers 422 (got ${reused.status})`,
    );
    check(
      /problem\+json/.test(reused.headers.get('content-type') ?? ''),
      '422 is application/problem+json',
    );
    check(
      /idempotency-key-reused/.test(problem.type ?? ''),
      `422 problem type (got ${problem.type})`,
    );
    log(`${kind}: 422 ok`);

    // More payments, each one event through outbox → RabbitMQ → inbox → one ledger entry.
    const payments = [JSON.parse(firstBody)];
    for (let i = 0; i < 4; i++) {
      const r = await post(randomUUID(), { customerId: `cus_${i}`, amount: 100 + i });
      check(r.status === 201, `POST /payments answers 201 (got ${r.status})`);
      payments.push(await r.json());
    }
    const got = await fetch(`${p.url}/payments/${payments[0].id}`);
    check(got.status === 200, `GET /payments/:id answers 200 (got ${got.status})`);
    for (const payment of payments) {
      await eventually(
        `payment ${payment.id} to be published and consumed`,
        async () => (await ledgerOf(payment.id)).length === 1,
      );
    }
    const rows = [];
    for (const payment of payments) {
      const [row] = await eventually('the outbox row to be marked sent', async () => {
        const r = await outboxOf(payment.id);
        return r.length === 1 && r[0].status === 'sent' ? r : undefined;
      });
      rows.push(row);
    }
    log(`${kind}: ${payments.length} payments published to RabbitMQ and consumed ok`);

    // Each message delivered twice more (a broker redelivery, a relay that published again),
    // then a sentinel behind them: once the sentinel is in, the copies have been handled.
    const envelope = (paymentId, amount) =>
      Buffer.from(JSON.stringify({ pattern: 'payment.captured', data: { paymentId, amount } }));
    const props = (id) => ({ messageId: id, persistent: true, headers: { 'message-id': id } });
    for (let i = 0; i < 2; i++)
      for (const [n, row] of rows.entries())
        channel.sendToQueue(queue, envelope(payments[n].id, payments[n].amount), props(row.id));
    const sentinel = randomUUID();
    channel.sendToQueue(queue, envelope(sentinel, 1), props(randomUUID()));
    await eventually(
      'the sentinel to be consumed',
      async () => (await ledgerOf(sentinel)).length === 1,
    );
    for (const payment of payments)
      check((await ledgerOf(payment.id)).length === 1, 'duplicate deliveries add no ledger entry');
    log(`${kind}: inbox processed each message once (${rows.length * 3 + 1} deliveries) ok`);

    // enableShutdownHooks: the hooks run (the relay stops), then Nest re-raises the signal.
    p.child.kill('SIGTERM');
    const exit = await Promise.race([
      new Promise((r) => p.child.once('exit', (code, signal) => r({ code, signal }))),
      sleep(15_000).then(() => ({ code: 'timeout' })),
    ]);
    check(
      (exit.code === 0 || exit.signal === 'SIGTERM') && p.output().includes('outbox.relay.stopped'),
      `SIGTERM stops the relay and ends the app (exit ${JSON.stringify(exit)}); output:\n${p.output()}`,
    );
    log(`${kind}: clean shutdown ok`);

    // With the consumer gone, any delivery it had not acknowledged is back in the queue.
    const { messageCount, consumerCount } = await channel.checkQueue(queue);
    check(consumerCount === 0, `no consumer left on the queue (got ${consumerCount})`);
    check(
      messageCount === 0,
      `0 messages unacknowledged or pending in the queue after the app stopped (got ${messageCount})`,
    );
    log(`${kind}: 0 unacknowledged messages ok`);
  } catch (e) {
    if (p) process.stderr.write(`app output (${kind}):\n${p.output()}\n`);
    throw e;
  } finally {
    if (p && p.child.exitCode === null) p.child.kill('SIGKILL');
    await channel?.deleteQueue(queue).catch(() => undefined);
    await conn?.close().catch(() => undefined);
    if (admin) {
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    }
  }
}

async function main() {
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'eo-consumer-'));
  try {
    const app = prepareApp(work);
    for (const kind of DATABASES) await scenario(app, kind);
  } finally {
    if (!process.env.CONSUMER_KEEP) rmSync(work, { recursive: true, force: true });
  }
  log(`PASS (${DATABASES.join(', ')}) in ${Math.round((Date.now() - started) / 1000)} s`);
  process.stdout.write(`consumer test: PASS (${DATABASES.join(', ')})\n`);
}

main().catch((e) => {
  process.stderr.write(`consumer test: FAIL: ${e.stack ?? e}\n`);
  process.exit(1);
});
