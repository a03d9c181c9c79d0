/**
 * Consumer-test case for the testing kit (`nestjs-exactly-once/testing`): runs the install lines
 * of docs/testing-kit.md (its `<!-- consumer:install -->` block), writes the complete Jest test
 * of that page (its `<!-- consumer:src/testing-kit.spec.ts -->` block, as a user copies it) into
 * the generated app and runs it with the app's own Jest (`npx jest src/testing-kit.spec.ts`):
 * the kit as published (package `exports`, typings), with the app's ts-jest, tsconfig and
 * installed peers. Throws on a non-zero exit. Called by test/consumer/run.js once the app has the
 * packed library and the README's installs.
 */
const { execFileSync, execSync } = require('node:child_process');
const { readFileSync, rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const DOC = join(__dirname, '..', '..', 'docs', 'testing-kit.md');

/** The page's `<!-- consumer:NAME -->` code blocks: `[{ name, code }]`. */
function docSnippets(markdown = readFileSync(DOC, 'utf8')) {
  const out = [];
  const re = /<!--\s*consumer:(\S+)\s*-->\s*\n```[\w-]*\n([\s\S]*?)\n```/g;
  for (let m; (m = re.exec(markdown));) out.push({ name: m[1], code: `${m[2]}\n` });
  return out;
}

/** The docs' test (`{ path, code }`) and its install lines. */
function testingKitSnippet(markdown = readFileSync(DOC, 'utf8')) {
  const snippets = docSnippets(markdown);
  const test = snippets.find((s) => /^src\/.+\.spec\.ts$/.test(s.name));
  if (!test) throw new Error(`${DOC} has no <!-- consumer:src/….spec.ts --> code block`);
  const install = snippets
    .filter((s) => s.name === 'install')
    .flatMap((s) => s.code.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.startsWith('npm install ') || line.startsWith('npm pkg set '));
  return { path: test.name, code: test.code, install };
}

async function runTestingKitCase({ app, log = (line) => process.stdout.write(`${line}\n`) }) {
  const { path, code, install } = testingKitSnippet();
  for (const command of install) {
    log(`testing kit: $ ${command}`);
    execSync(command, { cwd: app, stdio: 'inherit' });
  }
  const file = join(app, path);
  writeFileSync(file, code);
  log(`testing kit: docs/testing-kit.md's test as ${path}, run with the app's Jest`);
  try {
    execFileSync('npx', ['jest', path, '--ci', '--colors=false'], {
      cwd: app,
      stdio: 'inherit',
      env: { ...process.env, NODE_ENV: 'test', CI: 'true' },
    });
  } catch (e) {
    throw new Error(`testing kit: \`npx jest ${path}\` failed in ${app} (exit ${e.status})`);
  } finally {
    rmSync(file, { force: true });
  }
  log('testing kit: the docs test passed in the app: ok');
}

module.exports = { runTestingKitCase, testingKitSnippet };
