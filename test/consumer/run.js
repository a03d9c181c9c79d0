#!/usr/bin/env node
/**
 * The consumer test (.ci/consumer-test.sh): the library as a user gets it, in the app the tutorial
 * (docs/getting-started.md) shows, in the two kinds of app `nest new` makes. Packs the staged
 * package (`npm run package`), generates two apps with the Nest CLI from the registry, side by
 * side: today's `@nestjs/cli@latest` (Nest 12, an ES module app: `"type": "module"`, nodenext,
 * TypeScript 6) and `@nestjs/cli@11` (Nest 11, CommonJS). In each it runs the tutorial's
 * `consumer:install` commands with the tarball in place of `nestjs-exactly-once`, replaces the
 * generated src/ with the tutorial's `consumer:src/…` code blocks (nothing else: no template), and
 * checks that the package resolves as one copy with its types. Then per database of that app (ESM:
 * PostgreSQL and SQL Server's dialect on Babelfish; CommonJS: SQLite, by default; CONSUMER_PLAN
 * says otherwise, e.g. `esm:postgres,sqlite,mssql;cjs:postgres`): runs the tutorial's
 * `consumer:migrate` lines (build, the library's migrations, the user's own migration generated
 * with `typeorm migration:generate`, which must hold the user's tables and nothing of the
 * library's, run), starts the app and checks: a replay, a 422 for another payload under the same
 * key, the tutorial's GraphQL mutation (the same id on a retry, IDEMPOTENCY_KEY_REUSED), each payment's outbox event published to RabbitMQ and consumed once through the inbox,
 * duplicate deliveries skipped, a clean SIGTERM shutdown, and 0 messages left in the queue once
 * the consumer is gone (every delivery was acknowledged: an unacknowledged one returns to the
 * queue when its channel closes). SQL Server runs on a throw-away Babelfish cluster started from
 * ../shared/babelfish/start.sh (BABELFISH_DIR), free ports, wiped at the end; without that script
 * it is skipped with one line, as in .ci/sqlserver.sh. Ends with `consumer test: PASS (…)` or exits
 * non-zero. CONSUMER_KEEP=1 keeps the generated apps; CONSUMER_WORK=<the kept folder> reuses them
 * (only the library is installed again), for development.
 */
const { exec, execSync, spawn } = require('node:child_process');
const { promisify } = require('node:util');
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
const { createRequire } = require('node:module');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');
const amqp = require('amqplib');
const { Client } = require('pg');
const Database = require('better-sqlite3');
const sql = require('mssql');
const { runSchemaCliCase } = require('./schema-cli.case');
const { runTestingKitCase } = require('./testing-kit.case');
const { appFiles, commands, installCommands, TUTORIAL } = require('./readme-snippets');

const ROOT = join(__dirname, '..', '..');
const PG_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const RABBIT_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const BABELFISH_DIR = process.env.BABELFISH_DIR ?? join(ROOT, '..', 'shared', 'babelfish');

/** The two apps, the CLI that generates each, and the databases the tutorial runs on in each. */
const APPS = {
  esm: { cli: process.env.CONSUMER_NEST_CLI_ESM ?? '@nestjs/cli@latest', type: 'module' },
  cjs: { cli: process.env.CONSUMER_NEST_CLI_CJS ?? '@nestjs/cli@11', type: 'commonjs' },
};
const PLAN = (process.env.CONSUMER_PLAN ?? 'esm:postgres,mssql;cjs:sqlite')
  .split(';')
  .filter(Boolean)
  .map((entry) => {
    const [name, dbs] = entry.split(':');
    if (!APPS[name]) throw new Error(`CONSUMER_PLAN: no app "${name}" (esm, cjs)`);
    return { name, databases: dbs.split(',').filter(Boolean) };
  });

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

async function freePortFrom(port) {
  for (let p = port; ; p++) {
    const free = await new Promise((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(p, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return p;
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

/** A command in the background, its output prefixed with `[label]`; rejects on a non-zero exit. */
function runAsync(cmd, cwd, label, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, {
      cwd,
      shell: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let rest = '';
    const out = (d) => {
      const lines = (rest + d).split('\n');
      rest = lines.pop();
      for (const line of lines) process.stdout.write(`[${label}] ${line}\n`);
    };
    child.stdout.on('data', out);
    child.stderr.on('data', out);
    child.on('error', reject);
    child.on('close', (code) => {
      if (rest) process.stdout.write(`[${label}] ${rest}\n`);
      if (code === 0) resolve();
      else reject(new Error(`[${label}] ${cmd} exited with ${code}`));
    });
  });
}

/** The library packed as it is published: the tarball's path. */
async function pack(work) {
  const started = Date.now();
  log('packing the library (npm run package, npm pack ./dist/package)');
  await runAsync('npm run package --silent', ROOT, 'pack');
  const { stdout } = await promisify(exec)(
    `npm pack ${join(ROOT, 'dist', 'package')} --pack-destination ${work} --silent`,
  );
  log(`packed in ${Math.round((Date.now() - started) / 1000)} s`);
  return join(work, stdout.trim().split('\n').pop());
}

const versionIn = (app, pkg) => {
  try {
    return JSON.parse(readFileSync(join(app, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return 'absent';
  }
};

/** One generated app with the tarball and the tutorial's install commands. */
async function prepareApp(work, name, packed) {
  const { cli, type } = APPS[name];
  const app = join(work, name);
  if (existsSync(join(app, 'package.json'))) {
    const tgz = await packed;
    // Development shortcut: an app kept by an earlier run (CONSUMER_KEEP=1) gets the new tarball only.
    log(`${name}: reusing ${app}: npm install <tarball>`);
    await runAsync(`npm install ${tgz} --no-audit --no-fund`, app, name);
  } else {
    log(`${name}: generating an app with ${cli} (from the registry)`);
    await runAsync(`npx -y ${cli} new ${name} --skip-git --package-manager npm`, work, name);
    const tgz = await packed; // packed meanwhile
    const commands = installCommands(readFileSync(TUTORIAL, 'utf8'));
    check(commands.length > 0, 'the tutorial has consumer:install commands');
    for (const command of commands) {
      const withTarball = command.replace(/(^|\s)nestjs-exactly-once(?=\s|$)/, `$1${tgz}`);
      log(`${name}: $ ${withTarball}`);
      await runAsync(withTarball, app, name);
    }
  }
  const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
  const core = versionIn(app, '@nestjs/core');
  const versions = {
    nest: core,
    microservices: versionIn(app, '@nestjs/microservices'),
    cli: versionIn(app, '@nestjs/cli'),
    typescript: versionIn(app, 'typescript'),
    typeorm: versionIn(app, 'typeorm'),
  };
  check(
    (manifest.type ?? 'commonjs') === type,
    `the ${name} app is ${type} (package.json type: ${manifest.type})`,
  );
  check(
    versions.microservices.split('.')[0] === core.split('.')[0],
    `@nestjs/microservices ${versions.microservices} has the major of @nestjs/core ${core}`,
  );
  versions.nestTypeorm = versionIn(app, '@nestjs/typeorm');
  check(
    versions.nestTypeorm.split('.')[0] === core.split('.')[0],
    `@nestjs/typeorm ${versions.nestTypeorm} has the major of @nestjs/core ${core}`,
  );
  // The tutorial's `npm pkg set` lines land in the app's package.json, and better-sqlite3's native
  // build ran (its install script, allowed there).
  check(
    manifest.allowScripts?.['better-sqlite3'] === true,
    "the app's package.json allows better-sqlite3's install script",
  );
  check(
    existsSync(join(app, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node')),
    "better-sqlite3's native build is in the app",
  );
  log(
    `${name}: ${type} app, Nest ${versions.nest} (CLI ${versions.cli}), @nestjs/microservices ` +
      `${versions.microservices}, TypeScript ${versions.typescript}, TypeORM ${versions.typeorm}; ` +
      "better-sqlite3's install script allowed, its native build present: ok",
  );
  return { name, app, type, versions };
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
 * install script the tutorial allows, which unpacks it, and the check after the install commands
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

const LIBRARY_TABLES = /\b(idempotency_records|outbox_messages|inbox_messages)\b/;

/** The SQL of each `queryRunner.query(...)` of a generated migration's up(), in order. */
function upStatements(migration) {
  const up = migration.slice(migration.indexOf('async up('), migration.indexOf('async down('));
  return [...up.matchAll(/queryRunner\.query\(`((?:[^`\\]|\\.)*)`/g)].map((m) => m[1]);
}

/**
 * Babelfish 4.3 only (the SQL Server stand-in; SQL Server keeps names as written): its sys.indexes
 * reports PostgreSQL's internal name of every index (the T-SQL name and its table's, lower-cased,
 * cut to 31 characters, then an MD5: `ux_idempotency_records_scope_keb0db…`), which no name the
 * library gives can avoid; TypeORM matches indexes by name, so `migration:generate` proposes to
 * drop each library index under that name and create it under its own (and would fail at the
 * drop: PostgreSQL has no index of the T-SQL name). Upstream Babelfish stores and reports the
 * original name since babelfish_extensions#3429. Checked to be exactly that pair per declared
 * index, nothing else of the library's tables, and the pairs taken out of the file as a user on
 * Babelfish 4.3 does (docs/getting-started.md, SQL Server).
 */
function withoutBabelfishIndexChurn(app, file, migration) {
  // The library's index names as its entities declare them on SQL Server, read from the app's copy.
  const library = createRequire(join(app, 'package.json'))('nestjs-exactly-once');
  const declared = library
    .getIdempotencyEntities({ type: 'mssql' })
    .flatMap((e) =>
      (e.options.indices ?? []).map((i) =>
        (i.name.toLowerCase() + e.options.tableName).slice(0, 31),
      ),
    );
  const statements = upStatements(migration).filter((q) => LIBRARY_TABLES.test(q));
  const other = statements.filter((q) => {
    const created = /^CREATE (?:UNIQUE )?INDEX "([^"]+)" ON "([^"]+)"/.exec(q);
    if (created) return !declared.includes((created[1].toLowerCase() + created[2]).slice(0, 31));
    const dropped = /^DROP INDEX "([a-z0-9_]+)" ON "[^"]+"$/.exec(q)?.[1];
    return !declared.some(
      (prefix) =>
        dropped?.startsWith(prefix) && /^[0-9a-f]{32}$/.test(dropped.slice(prefix.length)),
    );
  });
  check(
    other.length === 0,
    `the generated migration proposes for the library's tables only Babelfish's index-name churn; also:\n${other.join('\n')}`,
  );
  const kept = migration
    .split('\n')
    .filter((line) => !(line.includes('queryRunner.query(') && LIBRARY_TABLES.test(line)));
  writeFileSync(file, kept.join('\n'));
  return statements.length;
}

/**
 * A file of the app that imports the optional parts from their subpath entry points
 * (`nestjs-exactly-once/admin`, `/redis`, `/kafka`, `/service-bus`, `/client-proxy`): the app's
 * tsc resolves their types (package.json `exports`, or `typesVersions`) and builds it.
 */
const SUBPATHS_SOURCE = `import { IdempotencyAdminModule, type AdminModuleOptions } from 'nestjs-exactly-once/admin';
import { ClientProxyPublisher } from 'nestjs-exactly-once/client-proxy';
import { KafkaPublisher, type KafkaPublisherOptions } from 'nestjs-exactly-once/kafka';
import { RedisReplayCacheStore } from 'nestjs-exactly-once/redis';
import { ServiceBusPublisher } from 'nestjs-exactly-once/service-bus';

export const optionalParts = [
  IdempotencyAdminModule,
  ClientProxyPublisher,
  KafkaPublisher,
  RedisReplayCacheStore,
  ServiceBusPublisher,
];
export type OptionalPartOptions = AdminModuleOptions | KafkaPublisherOptions;
`;

/** The tutorial's app for one database: its code blocks as src/, then its `consumer:migrate` lines. */
async function build(target, kind, env, babelfish) {
  const { app, name } = target;
  const markdown = readFileSync(TUTORIAL, 'utf8');
  rmSync(join(app, 'src'), { recursive: true, force: true });
  rmSync(join(app, 'dist'), { recursive: true, force: true });
  for (const [file, code] of Object.entries(appFiles(markdown, kind))) {
    mkdirSync(dirname(join(app, file)), { recursive: true });
    writeFileSync(join(app, file), code);
  }
  // The optional parts' entry points, compiled with the app (its module resolution and types).
  writeFileSync(join(app, 'src', 'subpaths.ts'), SUBPATHS_SOURCE);
  if (target.type === 'commonjs' && !target.typesChecked) {
    // The CommonJS app compiles with noImplicitAny off, where a package whose types did not
    // resolve would be \`any\` without a word: checked with it on (nodenext resolution, as the
    // app's tsconfig says).
    log(`${name}: $ npx tsc -p tsconfig.build.json --noEmit --noImplicitAny`);
    await runAsync('npx tsc -p tsconfig.build.json --noEmit --noImplicitAny', app, name);
    target.typesChecked = true;
  }
  const lines = commands(markdown, 'migrate');
  check(
    lines.some((l) => l.includes('migration:generate')),
    'the tutorial generates a migration',
  );
  for (const line of lines) {
    log(`${name}/${kind}: $ ${line}`);
    await runAsync(line, app, `${name}/${kind}`, env);
    if (!line.includes('migration:generate')) continue;
    const generated = readdirSync(join(app, 'src', 'migrations'));
    check(generated.length === 1, `one generated migration (got ${generated.join(', ')})`);
    const file = join(app, 'src', 'migrations', generated[0]);
    const migration = readFileSync(file, 'utf8');
    check(
      /ledger_entries/.test(migration) && /payments/.test(migration),
      'it creates the app tables',
    );
    if (babelfish && LIBRARY_TABLES.test(migration)) {
      const n = withoutBabelfishIndexChurn(app, file, migration);
      log(`${name}/${kind}: Babelfish 4.3's index-name churn (${n} statements) taken out`);
    }
    check(
      !LIBRARY_TABLES.test(readFileSync(file, 'utf8')),
      `and none of the library's (got:\n${migration})`,
    );
    log(
      `${name}/${kind}: the generated migration creates the app's tables and nothing of the library's: ok`,
    );
  }
}

/**
 * One copy of the library whichever way it is loaded: an ES module importing the package and its
 * `./client` entry, and `require()` of both, get the same objects (a CommonJS package with no ES
 * build: no dual-package hazard, one set of injection tokens). Run from the app's folder, as a
 * user's code resolves it. The app booting (its services injected with the library's providers)
 * is the other half.
 */
function oneCopy(target) {
  const probe = join(target.app, 'one-copy.probe.mjs');
  writeFileSync(
    probe,
    `import { createRequire } from 'node:module';
import * as root from 'nestjs-exactly-once';
import * as client from 'nestjs-exactly-once/client';
import * as kafka from 'nestjs-exactly-once/kafka';
import * as admin from 'nestjs-exactly-once/admin';
const require = createRequire(import.meta.url);
const same =
  root.IdempotencyModule === require('nestjs-exactly-once').IdempotencyModule &&
  root.OutboxService === require('nestjs-exactly-once').OutboxService &&
  client.createIdempotentFetch === require('nestjs-exactly-once/client').createIdempotentFetch &&
  typeof kafka.KafkaPublisher === 'function' &&
  kafka.KafkaPublisher === require('nestjs-exactly-once/kafka').KafkaPublisher &&
  kafka.KafkaPublisher === root.KafkaPublisher &&
  typeof admin.IdempotencyAdminModule === 'function' &&
  admin.IdempotencyAdminModule === require('nestjs-exactly-once/admin').IdempotencyAdminModule;
const copies = Object.keys(require.cache).filter((k) => /nestjs-exactly-once[\\/]dist[\\/]lib[\\/]index\\.js$/.test(k));
if (!same || copies.length !== 1 || typeof root.IdempotencyModule !== 'function') {
  console.error('not one copy', { same, copies });
  process.exit(1);
}
`,
  );
  try {
    run(`node ${probe}`, target.app);
  } finally {
    rmSync(probe, { force: true });
  }
  log(`${target.name}: import and require of the package, ./client, ./kafka and ./admin share one copy: ok`);
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
      // 90 s: the app builds its GraphQL schema at boot, and on a loaded 2-core machine the
      // ESM Nest 12 app took more than the former 30 s to listen.
    }, 90_000);
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
  log(
    `${app.split('/').pop()}/postgres: DATABASE_URL unset stops the app in ${Date.now() - started} ms, naming it ok`,
  );
}

/** The mssql driver's config of the tutorial's SQL Server environment variables. */
const mssqlConfig = (env, database = env.DB_NAME) => ({
  server: env.DB_HOST,
  port: Number(env.DB_PORT),
  user: env.DB_USER,
  password: env.DB_PASSWORD,
  database,
  options: { encrypt: false, trustServerCertificate: true },
});

/** A query on the app's database (a fresh connection each time); `$1`, `$2`… placeholders. */
function databaseReader(kind, env) {
  if (kind === 'postgres')
    return async (text, params) => {
      const c = new Client({ connectionString: env.DATABASE_URL });
      await c.connect();
      try {
        return (await c.query(text, params)).rows;
      } finally {
        await c.end();
      }
    };
  if (kind === 'mssql')
    return async (text, params) => {
      const pool = await new sql.ConnectionPool(mssqlConfig(env)).connect();
      try {
        const request = pool.request();
        params.forEach((v, i) => request.input(`p${i + 1}`, v));
        return (await request.query(text.replace(/\$(\d+)/g, '@p$1'))).recordset;
      } finally {
        await pool.close();
      }
    };
  return async (text, params) => {
    const db = new Database(env.DATABASE_FILE, { readonly: true, timeout: 5000 });
    try {
      return db.prepare(text.replace(/\$\d+/g, '?')).all(...params);
    } finally {
      db.close();
    }
  };
}

/**
 * A throw-away Babelfish cluster (../shared/babelfish/start.sh, as .ci/sqlserver.sh starts one):
 * a new data directory, free ports, the database `consumer`; `stop()` wipes it. Undefined where
 * the script is absent (a clone elsewhere: SQL Server is then skipped with one line).
 */
async function startBabelfish() {
  const start = join(BABELFISH_DIR, 'start.sh');
  if (!existsSync(start)) return undefined;
  const started = Date.now();
  const data = mkdtempSync(join(tmpdir(), 'eo-consumer-babelfish-'));
  const tdsPort = await freePortFrom(Number(process.env.CONSUMER_TDSPORT ?? 14331));
  const pgPort = await freePortFrom(Number(process.env.CONSUMER_PGPORT ?? 54331));
  const stop = () => {
    try {
      execSync(`bash ${join(BABELFISH_DIR, 'stop.sh')} --wipe`, {
        env: { ...process.env, BBF_DATA: data },
        stdio: 'ignore',
      });
    } catch {
      // already stopped
    }
    rmSync(data, { recursive: true, force: true });
  };
  let out;
  try {
    out = execSync(`bash ${start}`, {
      encoding: 'utf8',
      env: {
        ...process.env,
        BBF_DATA: data,
        TDSPORT: String(tdsPort),
        PGPORT: String(pgPort),
        BBF_DATABASES: 'consumer',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    stop();
    throw new Error(`Babelfish did not start: ${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
  const url = /babelfish: up\. MSSQL_URL=(\S+)/.exec(out)?.[1];
  if (!url) {
    stop();
    throw new Error(`start.sh printed no MSSQL_URL:\n${out}`);
  }
  const u = new URL(url);
  log(`a new Babelfish cluster on ${u.host} in ${Math.round((Date.now() - started) / 1000)} s`);
  return {
    env: {
      DB_HOST: u.hostname,
      DB_PORT: u.port,
      DB_USER: decodeURIComponent(u.username),
      DB_PASSWORD: decodeURIComponent(u.password),
      // Babelfish as CI runs it has no TLS (the tutorial's last TLS row).
      DB_ENCRYPT: 'false',
      DB_TRUST_SERVER_CERTIFICATE: 'true',
    },
    stop,
  };
}

/** One database in one app: the tutorial's app and migrations, then the feature end to end. */
async function scenario(target, kind, babelfish) {
  const { app, name } = target;
  const suffix = randomBytes(4).toString('hex');
  const queue = `consumer-${name}-${kind}-${suffix}`;
  const env = { EVENTS_QUEUE: queue, RABBITMQ_URL: RABBIT_URL };
  const label = `${name}/${kind}`;
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
  } else if (kind === 'mssql') {
    Object.assign(env, babelfish.env);
    dbName = `eo_consumer_${suffix}`;
    const pool = await new sql.ConnectionPool(mssqlConfig(env, 'master')).connect();
    await pool.request().query(`CREATE DATABASE ${dbName}`);
    await pool.close();
    env.DB_NAME = dbName;
  } else {
    env.DATABASE_FILE = join(app, `consumer-${suffix}.sqlite`);
  }
  const query = databaseReader(kind, env);
  const ledgerOf = async (paymentId) =>
    query('SELECT id FROM ledger_entries WHERE payment_id = $1', [paymentId]);
  const outboxOf = async (paymentId) =>
    query('SELECT id, status FROM outbox_messages WHERE partition_key = $1', [paymentId]);

  let conn;
  let channel;
  let p;
  try {
    await build(target, kind, env, kind === 'mssql');
    if (kind === 'postgres') await withoutDatabaseUrl(app, env);
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
    log(`${label}: replay ok`);

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
    log(`${label}: 422 ok`);

    // The tutorial's GraphQL mutation (step 7b): a retry gets the same payment, another amount
    // under the key an IDEMPOTENCY_KEY_REUSED error.
    const mutate = async (gqlKey, amount) => {
      const r = await fetch(`${p.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': gqlKey },
        body: JSON.stringify({
          query: 'mutation($i: CreatePaymentInput!) { createPayment(input: $i) { id amount } }',
          variables: { i: { customerId: 'cus_gql', amount } },
        }),
      });
      return { body: await r.json(), replayed: r.headers.get('idempotency-replayed') };
    };
    const gqlKey = randomUUID();
    const g1 = await mutate(gqlKey, 990);
    check(!g1.body.errors, `the mutation answers (got ${JSON.stringify(g1.body)})`);
    const g2 = await mutate(gqlKey, 990);
    check(
      g2.body.data?.createPayment?.id === g1.body.data.createPayment.id,
      'the mutation retried gives the same payment id',
    );
    check(g2.replayed === 'true', 'the mutation retried says Idempotency-Replayed: true');
    const g3 = await mutate(gqlKey, 991);
    check(
      g3.body.errors?.[0]?.extensions?.code === 'IDEMPOTENCY_KEY_REUSED' &&
        g3.body.errors[0].extensions.status === 422,
      `another amount under the key: IDEMPOTENCY_KEY_REUSED, 422 (got ${JSON.stringify(g3.body)})`,
    );
    log(`${label}: GraphQL mutation replay and reuse ok`);

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
    log(`${label}: ${payments.length} payments published to RabbitMQ and consumed ok`);

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
    log(`${label}: inbox processed each message once (${rows.length * 3 + 1} deliveries) ok`);

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
    log(`${label}: clean shutdown ok`);

    // With the consumer gone, any delivery it had not acknowledged is back in the queue.
    const { messageCount, consumerCount } = await channel.checkQueue(queue);
    check(consumerCount === 0, `no consumer left on the queue (got ${consumerCount})`);
    check(
      messageCount === 0,
      `0 messages unacknowledged or pending in the queue after the app stopped (got ${messageCount})`,
    );
    log(`${label}: 0 unacknowledged messages ok`);
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
  const reuse = process.env.CONSUMER_WORK;
  const work = reuse ?? mkdtempSync(join(tmpdir(), 'eo-consumer-'));
  const done = [];
  const skipped = [];
  let babelfish;
  try {
    offerLocalPrebuild(work);
    // Babelfish first: its start script runs synchronously (it would block this process while
    // the packing and the app generators write into their pipes).
    if (PLAN.some((a) => a.databases.includes('mssql'))) {
      babelfish = await startBabelfish();
      if (!babelfish)
        log(
          `mssql: SKIPPED, no ${join(BABELFISH_DIR, 'start.sh')} (SQL Server: docs/sql-server.md, SQL Server setup)`,
        );
    }
    // The library is packed while the Nest CLI generates the apps (CPU beside the network).
    const prepared = Date.now();
    const packed = pack(work);
    packed.catch(() => undefined); // awaited in prepareApp; a failure is reported there
    const targets = await Promise.all(PLAN.map(({ name }) => prepareApp(work, name, packed)));
    log(
      `library packed, apps generated and installed side by side in ${Math.round((Date.now() - prepared) / 1000)} s`,
    );
    // One scenario at a time: each is mostly CPU (tsc, the TypeORM CLI, the app) on a machine
    // that runs .ci/nest12.sh beside this phase; side by side they took longer (measured on a
    // loaded 2-core VM: 338 s against 267 s one after the other).
    for (const [i, { databases }] of PLAN.entries()) {
      const target = targets[i];
      if (target.type === 'module') oneCopy(target);
      for (const kind of databases) {
        if (kind === 'mssql' && !babelfish) {
          skipped.push(`${target.name}/${kind}`);
          continue;
        }
        const t = Date.now();
        await scenario(target, kind, babelfish);
        done.push(`${target.name}/${kind}`);
        log(`${target.name}/${kind}: passed in ${Math.round((Date.now() - t) / 1000)} s`);
      }
    }
    // The packed package's executable and its testing kit, as a user of the CommonJS app runs
    // them (the kit's test with the app's own Jest): after the scenarios, since the kit's
    // install lines add dev dependencies to that app.
    const cjs = targets.find((t) => t.type !== 'module');
    if (cjs) {
      const t = Date.now();
      await runSchemaCliCase({ app: cjs.app, log });
      await runTestingKitCase({ app: cjs.app, log });
      done.push(`${cjs.name}/schema-cli`, `${cjs.name}/testing-kit`);
      log(
        `${cjs.name}: schema CLI and testing kit passed in ${Math.round((Date.now() - t) / 1000)} s`,
      );
    }
    for (const t of targets)
      log(
        `${t.name}: ${t.type}, Nest ${t.versions.nest}, CLI ${t.versions.cli}, TypeScript ${t.versions.typescript}, TypeORM ${t.versions.typeorm}`,
      );
  } finally {
    babelfish?.stop();
    if (!process.env.CONSUMER_KEEP && !reuse) {
      // The two apps are ~450 MB of small files; deleting them took ~3 min on the CI VM's disk
      // (online discard), so it finishes after this process, in a process of its own.
      spawn('rm', ['-rf', work], { detached: true, stdio: 'ignore' }).unref();
    } else log(`apps kept in ${work} (CONSUMER_WORK=${work} reuses them)`);
  }
  const summary = done.join(', ') + (skipped.length ? `; skipped ${skipped.join(', ')}` : '');
  log(`PASS (${summary}) in ${Math.round((Date.now() - started) / 1000)} s`);
  process.stdout.write(`consumer test: PASS (${summary})\n`);
}

main().catch((e) => {
  process.stderr.write(`consumer test: FAIL: ${e.stack ?? e}\n`);
  process.exit(1);
});
