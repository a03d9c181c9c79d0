/**
 * Consumer-test case for the `nestjs-exactly-once` executable as installed from the packed
 * package (package.json `bin`, linked into the app's node_modules/.bin, executable): `--help`,
 * `schema sql --dialect mssql` prints CREATE TABLE statements in GO batches, and on a new SQLite
 * file `schema status` fails (exit 1), `schema migrate` applies, `status` then passes. Throws on
 * any other outcome. Called by test/consumer/run.js once the app has the packed library.
 */
const { spawnSync } = require('node:child_process');
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

function cli(app, args) {
  const r = spawnSync('npx', ['--no-install', 'nestjs-exactly-once', ...args], {
    cwd: app,
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

function expect(condition, message, r) {
  if (!condition) {
    throw new Error(`schema CLI: ${message}\nstdout: ${r?.stdout}\nstderr: ${r?.stderr}`);
  }
}

async function runSchemaCliCase({ app, log = (line) => process.stdout.write(`${line}\n`) }) {
  const help = cli(app, ['--help']);
  expect(help.code === 0 && help.stdout.includes('schema migrate'), '--help', help);

  const sql = cli(app, ['schema', 'sql', '--dialect', 'mssql']);
  expect(sql.code === 0, '`schema sql --dialect mssql` exit 0', sql);
  expect(
    /^GO$/m.test(sql.stdout) && /CREATE TABLE \[outbox_messages\]/.test(sql.stdout),
    'T-SQL in GO batches',
    sql,
  );

  const dir = mkdtempSync(join(tmpdir(), 'eo-cli-'));
  try {
    const url = `sqlite:${join(dir, 'app.sqlite')}`;
    writeFileSync(join(dir, 'app.sqlite'), '');
    const before = cli(app, ['schema', 'status', '--url', url]);
    expect(before.code === 1, '`schema status` on an empty database exits 1', before);
    const migrate = cli(app, ['schema', 'migrate', '--url', url]);
    expect(migrate.code === 0, '`schema migrate` exits 0', migrate);
    const after = cli(app, ['schema', 'status', '--url', url]);
    expect(after.code === 0, '`schema status` after migrate exits 0', after);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  log(
    'schema CLI: npx nestjs-exactly-once --help, schema sql (GO batches), status 1 → migrate → status 0: ok',
  );
}

module.exports = { runSchemaCliCase };
