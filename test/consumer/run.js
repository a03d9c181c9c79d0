#!/usr/bin/env node
/**
 * The consumer test (.ci/consumer-test.sh): the library as a user gets it. Packs the staged
 * package (`npm run package`), generates a new app with the Nest CLI from the registry
 * (`nest new`, Nest 11), runs the README's `consumer:install` commands with the tarball in place
 * of `nestjs-exactly-once`, copies the template app (test/consumer/app-template, the same files as
 * the README's `consumer:src/…` snippets), then per database (PostgreSQL, SQLite): builds, runs
 * the migrations with the TypeORM CLI as the README says, starts the app and checks: a replay,
 * a 422 for another payload under the same key, the outbox event published to RabbitMQ and
 * consumed once through the inbox, a duplicate delivery skipped, a clean SIGTERM shutdown.
 * Ends with `consumer test: PASS (…)` or exits non-zero.
 */
const { execSync, spawn } = require('node:child_process');
const { randomBytes, randomUUID } = require('node:crypto');
const { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const amqp = require('amqplib');
const { Client } = require('pg');
const Database = require('better-sqlite3');
const { installCommands, README, TEMPLATE } = require('./readme-snippets');

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
  log('packing the library (npm run package, npm pack dist/package)');
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

  log(`generating an app with ${NEST_CLI} (from the registry)`);
  run(`npx -y ${NEST_CLI} new app --skip-git --package-manager npm`, work);
  const app = join(work, 'app');

  const commands = installCommands(readFileSync(README, 'utf8'));
  check(commands.length > 0, 'the README has consumer:install commands');
  for (const command of commands) {
    const withTarball = command.replace(/(^|\s)nestjs-exactly-once(?=\s|$)/, `$1${tgz}`);
    log(`$ ${withTarball}`);
    run(withTarball, app);
  }

  // The template's src/ replaces the generated one (its controller, service and unit test).
  rmSync(join(app, 'src'), { recursive: true, force: true });
  cpSync(join(TEMPLATE, 'src'), join(app, 'src'), { recursive: true });
  return app;
}

/** Selects the database variant of src/database.ts and builds. */
function build(app, kind) {
  cpSync(join(TEMPLATE, 'src', `database.${kind}.ts`), join(app, 'src', 'database.ts'));
  for (const f of readdirSync(join(app, 'src')))
    if (/^database\.\w+\.ts$/.test(f)) rmSync(join(app, 'src', f));
  rmSync(join(app, 'dist'), { recursive: true, force: true });
  run('npm run build', app);
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
      return (await fetch(`${url}/ledger`)).status === 200;
    });
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${e.message}; app output:\n${out}`);
  }
  return { url, child, output: () => out };
}

/** One database: migrations through the TypeORM CLI, then the short e2e. */
async function scenario(app, kind) {
  const suffix = randomBytes(4).toString('hex');
  const queue = `consumer-${kind}-${suffix}`;
  const env = { EVENTS_QUEUE: queue, RABBITMQ_URL: RABBIT_URL };
  let admin;
  let dbName;
  let readOutbox;
  if (kind === 'postgres') {
    admin = new Client({ connectionString: PG_URL });
    await admin.connect();
    dbName = `eo_consumer_${suffix}`;
    await admin.query(`CREATE DATABASE ${dbName}`);
    const u = new URL(PG_URL);
    u.pathname = `/${dbName}`;
    env.DATABASE_URL = u.toString();
    readOutbox = async (partitionKey) => {
      const c = new Client({ connectionString: env.DATABASE_URL });
      await c.connect();
      try {
        const r = await c.query('SELECT id, status FROM outbox_messages WHERE partition_key = $1', [
          partitionKey,
        ]);
        return r.rows;
      } finally {
        await c.end();
      }
    };
  } else {
    env.DATABASE_FILE = join(app, `consumer-${suffix}.sqlite`);
    readOutbox = async (partitionKey) => {
      const db = new Database(env.DATABASE_FILE, { readonly: true, timeout: 5000 });
      try {
        return db
          .prepare('SELECT id, status FROM outbox_messages WHERE partition_key = ?')
          .all(partitionKey);
      } finally {
        db.close();
      }
    };
  }

  const conn = await amqp.connect(RABBIT_URL);
  const channel = await conn.createChannel();
  let p;
  try {
    build(app, kind);
    log(`${kind}: npx typeorm migration:run -d dist/data-source.js`);
    run('npx typeorm migration:run -d dist/data-source.js', app, env);
    p = await startApp(app, env);

    const key = randomUUID();
    const post = (body) =>
      fetch(`${p.url}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
      });
    const first = await post({ customerId: 'cus_1', amount: 42 });
    const firstBody = await first.text();
    check(first.status === 201, `first POST answers 201 (got ${first.status}: ${firstBody})`);
    check(!first.headers.has('idempotency-replayed'), 'the first answer is no replay');
    const replay = await post({ customerId: 'cus_1', amount: 42 });
    const replayBody = await replay.text();
    check(replay.status === 201, `the retry answers 201 (got ${replay.status})`);
    check(replayBody === firstBody, 'the retry gets the same body byte for byte');
    check(
      replay.headers.get('idempotency-replayed') === 'true',
      'the retry says Idempotency-Replayed: true',
    );
    log(`${kind}: replay ok`);

    const reused = await post({ customerId: 'cus_1', amount: 43 });
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

    const payment = JSON.parse(firstBody);
    const ledgerOf = async (paymentId) =>
      (await (await fetch(`${p.url}/ledger`)).json()).filter((e) => e.paymentId === paymentId);
    await eventually(
      'the event to be published and consumed',
      async () => (await ledgerOf(payment.id)).length === 1,
    );
    const [row] = await eventually('the outbox row to be marked sent', async () => {
      const rows = await readOutbox(payment.id);
      return rows.length === 1 && rows[0].status === 'sent' ? rows : undefined;
    });
    log(`${kind}: outbox published to RabbitMQ and consumed ok`);

    // The same message delivered twice more (a broker redelivery, a relay that published again),
    // then a sentinel behind them: once the sentinel is in, the copies have been handled.
    const envelope = (paymentId, amount) =>
      Buffer.from(JSON.stringify({ pattern: 'payment.captured', data: { paymentId, amount } }));
    const props = (id) => ({ messageId: id, persistent: true, headers: { 'message-id': id } });
    for (let i = 0; i < 2; i++) channel.sendToQueue(queue, envelope(payment.id, 42), props(row.id));
    const sentinel = randomUUID();
    channel.sendToQueue(queue, envelope(sentinel, 1), props(randomUUID()));
    await eventually(
      'the sentinel to be consumed',
      async () => (await ledgerOf(sentinel)).length === 1,
    );
    await eventually(
      'the queue to drain',
      async () => (await channel.checkQueue(queue)).messageCount === 0,
    );
    check((await ledgerOf(payment.id)).length === 1, 'duplicate deliveries add no ledger entry');
    log(`${kind}: inbox processed the message once ok`);

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
  } catch (e) {
    if (p) process.stderr.write(`app output (${kind}):\n${p.output()}\n`);
    throw e;
  } finally {
    if (p && p.child.exitCode === null) p.child.kill('SIGKILL');
    await channel.deleteQueue(queue).catch(() => undefined);
    await conn.close().catch(() => undefined);
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
